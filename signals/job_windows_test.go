package signals

import (
	"errors"
	"os"
	"os/exec"
	"testing"

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
		h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(cmd.Process.Pid))
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
		if err := j.assign(cmd.Process.Pid); !errors.Is(err, errExitedEarly) {
			t.Fatalf("assign of an exited process: %v, want errExitedEarly", err)
		}
		cmd.Wait()
	})
}
