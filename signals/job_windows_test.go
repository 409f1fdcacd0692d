package signals

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

func TestJobAssign(t *testing.T) {
	t.Run("SIG-2/PLAT-1/a-child-gone-before-the-assignment-is-not-a-job-failure", func(t *testing.T) {
		// A child that exits within microseconds (cmd /c echo) is gone before Run assigns it:
		// Windows refuses (access denied), and the launcher must not warn that the job failed.
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, "-test.run=^$")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Our own handle keeps the pid the child's after it exits.
		h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|
			windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		defer windows.CloseHandle(h)
		if _, err := windows.WaitForSingleObject(h, windows.INFINITE); err != nil {
			t.Fatal(err)
		}
		j, err := newJob()
		if err != nil {
			t.Fatal(err)
		}
		defer j.close()
		if err := j.assign(h); !errors.Is(err, errExitedEarly) {
			t.Fatalf("assign of an exited process: %v, want errExitedEarly", err)
		}
		cmd.Wait()
	})
}

// grandchildPid starts a child through Run that at once starts a grandchild (breakaway: with
// CREATE_BREAKAWAY_FROM_JOB) and returns the grandchild's pid after Run returned, that is after
// the job was closed. before, when set, runs between the child's creation and its assignment to
// the job, with the path of the file the child writes the grandchild's pid to.
func grandchildPid(t *testing.T, breakaway bool, before func(out string)) int {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "grandchild.pid")
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), grandchildOutEnv+"="+out)
	if breakaway {
		cmd.Env = append(cmd.Env, breakawayEnv+"=1")
	}
	if before != nil {
		beforeAssign = func(int) { before(out) }
	}
	defer func() { beforeAssign = nil }()
	status, err := Run(context.Background(), cmd, Options{})
	if err != nil || status != 0 {
		t.Fatalf("Run: status %d, %v; want the child's 0 (4: it could not start its grandchild)", status, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitGone reports whether process pid has ended within d (true also when it is gone already).
func waitGone(pid int, d time.Duration) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return true // no such process any more
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, uint32(d.Milliseconds()))
	return err == nil && ev == windows.WAIT_OBJECT_0
}

func TestJobMembership(t *testing.T) {
	t.Run("PLAT-1/SIG-2/the-child-runs-no-instruction-before-it-is-in-the-job", func(t *testing.T) {
		// The child would start its grandchild at once; created suspended, it has not run when
		// the assignment comes, however long that takes (here 1 s), so the grandchild is a
		// member and ends with the job.
		ran := false
		pid := grandchildPid(t, false, func(out string) {
			// The pid file is the child's first act: it is there as soon as the child runs.
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline) && !ran; {
				_, err := os.Stat(out)
				ran = err == nil
				time.Sleep(20 * time.Millisecond)
			}
		})
		if ran {
			t.Error("the child ran code before it was assigned to the job")
		}
		if !waitGone(pid, 30*time.Second) {
			_ = killPid(pid)
			t.Fatal("the grandchild the child started at once outlived the job")
		}
	})
	t.Run("PLAT-1/SIG-2/a-breakaway-grandchild-outlives-the-job", func(t *testing.T) {
		// An agent opening a browser for a login starts it with CREATE_BREAKAWAY_FROM_JOB: the
		// job allows it (JOB_OBJECT_LIMIT_BREAKAWAY_OK; else the start fails with access
		// denied and the child exits 4), and the browser survives the job's close.
		pid := grandchildPid(t, true, nil)
		defer killPid(pid)
		if waitGone(pid, 2*time.Second) {
			t.Fatal("the breakaway grandchild ended with the job")
		}
	})
	t.Run("PLAT-1/SIG-2/a-grandchild-without-breakaway-ends-with-the-job", func(t *testing.T) {
		pid := grandchildPid(t, false, nil)
		if !waitGone(pid, 30*time.Second) {
			_ = killPid(pid)
			t.Fatal("the grandchild outlived the job")
		}
	})
}

// killPid terminates process pid.
func killPid(pid int) error {
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return windows.TerminateProcess(h, 1)
}
