//go:build linux

package signals

import (
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// procSessionMembers is macOS's sessionMembers, read from /proc: the live processes of session
// sid other than this one.
func procSessionMembers(sid int) []int {
	var out []int
	for _, st := range listProcs(func(st procStat) bool {
		return st.session == sid && st.state != 'Z' && st.pid != os.Getpid()
	}) {
		out = append(out, st.pid)
	}
	return out
}

// TestSweepSession runs macOS's cleanup of a PTY session (no subreaper there) on Linux: what a
// session leader left behind, in its group or not, ignoring SIGTERM or not, is ended (SPEC SIG-2,
// PLAT-1).
func TestSweepSession(t *testing.T) {
	t.Run("SIG-2/PLAT-1/darwin-session-sweep-ends-leftovers", func(t *testing.T) {
		dir := t.TempDir()
		cmd := exec.Command("sh", "-c", `sleep 300 & echo $! > "$D/polite"
(trap '' TERM; exec sleep 300) & echo $! > "$D/stubborn"
exit 0`)
		cmd.Env = append(os.Environ(), "D="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		sid := cmd.Process.Pid
		left := procSessionMembers(sid)
		if len(left) != 2 {
			t.Fatalf("session %d has %v left, want the two sleepers", sid, left)
		}
		t.Cleanup(func() {
			for _, pid := range procSessionMembers(sid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		})
		s := &supervisor{log: slog.New(slog.DiscardHandler)}
		start := time.Now()
		s.sweepSession(sid, procSessionMembers)
		if rest := procSessionMembers(sid); len(rest) != 0 {
			t.Fatalf("still in session %d after the sweep: %v", sid, rest)
		}
		if d := time.Since(start); d < LeftoverGrace || d > 3*time.Second {
			t.Fatalf("sweep took %v, want the SIGKILL after LeftoverGrace (%v) for the stubborn one", d, LeftoverGrace)
		}
		for _, f := range []string{"polite", "stubborn"} {
			pid, _ := strconv.Atoi(readFile(dir + "/" + f))
			if st, ok := procState(pid, "sleep"); ok && st != 'Z' {
				t.Errorf("%s sleeper %d still alive (state %c)", f, pid, st)
			}
		}
	})
}
