//go:build linux

package signals

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"golang.org/x/sys/unix"
)

// TestChildProcsMovedChildren: the per-thread children lists (5175bde) still find a child whose
// starting thread has exited (the kernel moves it to another thread's list) and an orphaned
// grandchild adopted by this process as subreaper, as the full /proc scan did (SPEC SIG-2:
// leftovers are found and reaped).
func TestChildProcsMovedChildren(t *testing.T) {
	if _, ok := childPIDs(); !ok {
		t.Skip("kernel without /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN): childProcs scans /proc")
	}
	has := func(pid int) bool {
		for _, st := range childProcs(func(procStat) bool { return true }) {
			if st.pid == pid {
				return true
			}
		}
		return false
	}
	t.Run("SIG-2/child-of-an-exited-thread-is-found", func(t *testing.T) {
		// The goroutine must not run on the main thread, which the runtime parks instead of
		// ending; it retries on another thread then.
		var c *exec.Cmd
		var thread int
		for c == nil {
			got := make(chan *exec.Cmd, 1)
			tid := make(chan int, 1)
			go func() {
				runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
				if tid <- unix.Gettid(); unix.Gettid() == os.Getpid() {
					runtime.UnlockOSThread()
					got <- nil
					return
				}
				cmd := exec.Command("sleep", "30")
				if cmd.Start() != nil {
					t.Error("sleep did not start")
					got <- nil
					return
				}
				got <- cmd
			}()
			c, thread = <-got, <-tid
			if t.Failed() {
				t.FailNow()
			}
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		testkit.WaitFor(t, 5*time.Second, "the starting thread gone", func() bool {
			_, err := os.Stat("/proc/self/task/" + strconv.Itoa(thread))
			return os.IsNotExist(err)
		})
		if !has(c.Process.Pid) {
			t.Fatalf("child %d not found after its thread %d exited", c.Process.Pid, thread)
		}
	})
	t.Run("SIG-2/orphan-adopted-as-subreaper-is-found", func(t *testing.T) {
		restore, ok := subreaper()
		if !ok {
			t.Skip("prctl PR_SET_CHILD_SUBREAPER refused")
		}
		defer restore()
		// sh starts a background sleep, prints its pid and exits: the sleep is reparented to us.
		out, err := exec.Command("sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!").Output()
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("pid %q: %v", out, err)
		}
		t.Cleanup(func() {
			_ = unix.Kill(pid, unix.SIGKILL)
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, 0, nil)
		})
		testkit.WaitFor(t, 5*time.Second, "the adopted orphan listed", func() bool {
			st, ok := readProcStat(strconv.Itoa(pid), new([]byte))
			return ok && st.ppid == os.Getpid() && has(pid)
		})
	})
}
