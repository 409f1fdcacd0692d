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

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
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
		// The sleepers start asynchronously: wait until both have exec'd sleep (the stubborn one's
		// ignored SIGTERM is in place only then), else a loaded machine sends SIGTERM too early.
		testkit.WaitFor(t, 10*time.Second, "both sleepers running sleep", func() bool {
			for _, f := range []string{"polite", "stubborn"} {
				pid, err := strconv.Atoi(readFile(dir + "/" + f))
				if err != nil {
					return false
				}
				if st, ok := procState(pid, "sleep"); !ok || st == 'Z' {
					return false
				}
			}
			return true
		})
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
		if d := time.Since(start); d < LeftoverGrace || d > 3*time.Second {
			t.Fatalf("sweep took %v, want the SIGKILL after LeftoverGrace (%v) for the stubborn one", d, LeftoverGrace)
		}
		// SIGKILL is delivered asynchronously: on a busy machine the killed sleeper can still be
		// listed for a moment after kill(2) returned, so wait for it to go (bounded).
		testkit.WaitFor(t, 5*time.Second, "session empty after the sweep", func() bool {
			return len(procSessionMembers(sid)) == 0
		})
		for _, f := range []string{"polite", "stubborn"} {
			pid, _ := strconv.Atoi(readFile(dir + "/" + f))
			if st, ok := procState(pid, "sleep"); ok && st != 'Z' {
				t.Errorf("%s sleeper %d still alive (state %c)", f, pid, st)
			}
		}
	})
}
