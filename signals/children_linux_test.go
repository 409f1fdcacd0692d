//go:build linux

package signals

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// TestChildProcs: the per-thread children lists Run reads find the same children as a scan of
// every process in /proc — running ones, a zombie, and children started from other OS threads
// (each thread lists only the children it started) — so the orphan reaping and cleanup of SPEC
// SIG-2 see everything the old full scan saw.
func TestChildProcs(t *testing.T) {
	t.Run("SIG-2/children-lists-match-full-proc-scan", func(t *testing.T) {
		if _, ok := childPIDs(); !ok {
			t.Skip("kernel without /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN): childProcs scans /proc")
		}
		var cmds []*exec.Cmd
		t.Cleanup(func() {
			for _, c := range cmds {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		})
		start := func(args ...string) *exec.Cmd {
			c := exec.Command(args[0], args[1:]...)
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, c)
			return c
		}
		// Started from three OS threads at once (each goroutine holds its thread locked until the
		// end of the test), so the children sit in three different threads' lists.
		release := make(chan struct{})
		var held sync.WaitGroup
		t.Cleanup(func() { close(release); held.Wait() })
		for range 3 {
			started := make(chan *exec.Cmd)
			held.Add(1)
			go func() {
				defer held.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				c := exec.Command("sleep", "30")
				if err := c.Start(); err != nil {
					started <- nil
					return
				}
				started <- c
				<-release
			}()
			c := <-started
			if c == nil {
				t.Fatal("sleep did not start")
			}
			cmds = append(cmds, c)
		}
		zombie := start("true") // not waited for: stays a zombie until Cleanup
		self := os.Getpid()
		full := func() []int {
			var pids []int
			for _, st := range listProcs(func(st procStat) bool { return st.ppid == self }) {
				pids = append(pids, st.pid)
			}
			slices.Sort(pids)
			return pids
		}
		testkit.WaitFor(t, 5*time.Second, "zombie", func() bool {
			st, ok := readProcStat(strconv.Itoa(zombie.Process.Pid), new([]byte))
			return ok && st.state == 'Z'
		})
		want := full()
		if len(want) < 4 {
			t.Fatalf("full scan found %v, want the 4 children", want)
		}
		var got []int
		for _, st := range childProcs(func(procStat) bool { return true }) {
			got = append(got, st.pid)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("childProcs %v, full /proc scan %v", got, want)
		}
		zs := childProcs(func(st procStat) bool { return st.state == 'Z' })
		if len(zs) != 1 || zs[0].pid != zombie.Process.Pid {
			t.Fatalf("zombies %v, want only %d", zs, zombie.Process.Pid)
		}
	})
}

// BenchmarkOurChildren is the cost of one look at this process's children, which Run takes
// before the child starts and on every SIGCHLD and cleanup round after it (SPEC SIG-2). The
// test process has three children, like a launcher whose child left two orphans.
func BenchmarkOurChildren(b *testing.B) {
	for range 3 {
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(ourChildren()) < 3 {
			b.Fatal("children missing")
		}
	}
}

// TestHasChildren: the check that lets childProcs skip its /proc reads agrees with a scan of
// every process in /proc — no child, a running child, a zombie (not reaped by the check), and
// again none after the reap — so Run's orphan and zombie cleanup (SPEC SIG-2) still sees every
// child while a launch whose child left nothing reads no /proc file.
func TestHasChildren(t *testing.T) {
	t.Run("SIG-2/no-children-check-agrees-with-full-proc-scan", func(t *testing.T) {
		self := os.Getpid()
		scan := func() bool { return len(listProcs(func(st procStat) bool { return st.ppid == self })) > 0 }
		check := func(when string, want bool) {
			t.Helper()
			if got, full := hasChildren(), scan(); got != full || got != want {
				t.Fatalf("%s: hasChildren %v, full /proc scan %v, want %v", when, got, full, want)
			}
		}
		if scan() {
			t.Skip("the test process already has children (another test's)")
		}
		check("before any child", false)
		if got := childProcs(func(procStat) bool { return true }); got != nil {
			t.Fatalf("childProcs without children: %v", got)
		}
		sleeper := exec.Command("sleep", "30")
		if err := sleeper.Start(); err != nil {
			t.Fatal(err)
		}
		check("running child", true)
		_ = sleeper.Process.Kill()
		testkit.WaitFor(t, 5*time.Second, "zombie", func() bool {
			st, ok := readProcStat(strconv.Itoa(sleeper.Process.Pid), new([]byte))
			return ok && st.state == 'Z'
		})
		check("zombie child", true)
		check("zombie child, looked at twice", true) // WNOWAIT: the first look reaped nothing
		if len(childProcs(func(st procStat) bool { return st.state == 'Z' })) != 1 {
			t.Fatal("childProcs lost the zombie")
		}
		_ = sleeper.Wait()
		check("after the reap", false)
	})
}

// BenchmarkOurChildrenNone is the look at this process's children that Run takes before the
// child starts and on every SIGCHLD and cleanup round after it, when there are none: the common
// launch.
func BenchmarkOurChildrenNone(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if len(ourChildren()) != 0 {
			b.Fatal("unexpected children")
		}
	}
}
