//go:build linux

package signals

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"golang.org/x/sys/unix"
)

// TestChildDiesWithKilledLauncher: a launcher killed with SIGKILL runs no cleanup of its own;
// the child's parent-death signal (startChild) still ends it (SPEC SIG-2 "no orphan survives
// the launcher"). While the launcher lives, the child survives the runtime ending OS threads
// (Go issue 27505: the signal follows the forking thread, not the process).
func TestChildDiesWithKilledLauncher(t *testing.T) {
	t.Run("SIG-2/child-dies-with-a-killed-launcher", func(t *testing.T) {
		churned := filepath.Join(t.TempDir(), "churned")
		cmd := launcher(t, []string{"SIGNALS_TEST_CHURN=" + churned}, "sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
		var child int
		testkit.WaitFor(t, 5*time.Second, "the launcher's child sleep", func() bool {
			child = childOf(cmd.Process.Pid, "sleep")
			return child > 0
		})
		t.Cleanup(func() { _ = unix.Kill(child, unix.SIGKILL) }) // without the fix it survives
		alive := func() bool { st, ok := procState(child, "sleep"); return ok && st != 'Z' }
		testkit.WaitFor(t, 10*time.Second, "thread churn done or the child gone", func() bool {
			return fileExists(churned) || !alive()
		})
		if !alive() {
			t.Fatalf("child %d died while the launcher lives (the runtime ended OS threads)", child)
		}

		sendSignal(t, cmd.Process.Pid, unix.SIGKILL)
		_ = cmd.Wait()
		deadline := time.Now().Add(5 * time.Second)
		for {
			st, ok := procState(child, "sleep")
			if !ok || st == 'Z' {
				return // gone (a zombie is dead: only its reaper, not the launcher, is left)
			}
			if time.Now().After(deadline) {
				t.Fatalf("child %d still running (state %q) 5 s after the launcher was killed", child, st)
			}
			time.Sleep(20 * time.Millisecond) // polling with a deadline
		}
	})
}

// childOf returns the pid of a child of pid whose command name is comm, 0 when there is none
// yet, from /proc/PID/task/*/children.
func childOf(pid int, comm string) int {
	lists, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	for _, l := range lists {
		b, _ := os.ReadFile(l)
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				if _, ok := procState(c, comm); ok {
					return c
				}
			}
		}
	}
	return 0
}
