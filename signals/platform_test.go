package signals

import (
	"io/fs"
	"os/exec"
	"slices"
	"testing"
)

// The per-OS decisions are plain functions of the OS name: tested here for every OS, on
// whichever OS runs the tests (SPEC PLAT-1).
func TestPlatformDecisions(t *testing.T) {
	unixSignals := []string{"SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"}
	cases := []struct {
		goos      string
		forwarded []string
		pty       bool
		cleanup   string
	}{
		{"linux", unixSignals, true, "subreaper"},
		{"darwin", unixSignals, true, "group+session"},
		{"windows", nil, false, "job"},
	}
	for _, c := range cases {
		t.Run("PLAT-1/"+c.goos+"/forwarded-signals", func(t *testing.T) {
			if got := forwardedSignalNames(c.goos); !slices.Equal(got, c.forwarded) {
				t.Fatalf("forwardedSignalNames(%q) = %v, want %v", c.goos, got, c.forwarded)
			}
		})
		t.Run("PLAT-1/"+c.goos+"/pty", func(t *testing.T) {
			if got := usesPTY(c.goos); got != c.pty {
				t.Fatalf("usesPTY(%q) = %v, want %v", c.goos, got, c.pty)
			}
		})
		t.Run("PLAT-1/"+c.goos+"/tree-cleanup", func(t *testing.T) {
			if got := treeCleanup(c.goos); got != c.cleanup {
				t.Fatalf("treeCleanup(%q) = %q, want %q", c.goos, got, c.cleanup)
			}
		})
	}
}

// TestNotFoundEveryOS checks the 127 mapping for the ways each OS reports a missing command
// (SPEC RUN-3, PLAT-1).
func TestNotFoundEveryOS(t *testing.T) {
	t.Run("RUN-3/PLAT-1/missing-path-windows-lookpath-127", func(t *testing.T) {
		// exec.LookPath on Windows, for a name with a separator and no file under any PATHEXT
		// extension, returns an *exec.Error wrapping fs.ErrNotExist.
		err := &exec.Error{Name: `C:\nope\claude`, Err: fs.ErrNotExist}
		if got := ExitStatus(err); got != StatusNotFound {
			t.Fatalf("ExitStatus(%v) = %d, want 127", err, got)
		}
	})
	t.Run("RUN-3/PLAT-1/unknown-command-on-this-os-127", func(t *testing.T) {
		err := exec.Command("dual-proxy-test-no-such-command").Start()
		if got := ExitStatus(err); got != StatusNotFound {
			t.Fatalf("ExitStatus(%v) = %d, want 127", err, got)
		}
	})
}

// TestFinishedStatus is the exit-status mapping of every OS (SPEC RUN-3, PLAT-1).
func TestFinishedStatus(t *testing.T) {
	cases := []struct {
		name      string
		code      int
		signaled  bool
		sig, want int
	}{
		{"RUN-3/PLAT-1/exit-0", 0, false, 0, 0},
		{"RUN-3/PLAT-1/unix-exit-code", 42, false, 0, 42},
		{"RUN-3/PLAT-1/unix-sigterm-143", -1, true, 15, 143},
		{"RUN-3/PLAT-1/windows-ctrl-c-exit-code-kept", 0xC000013A, false, 0, 3221225786},
		{"RUN-3/PLAT-1/unknown-code-1", -1, false, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := finishedStatus(c.code, c.signaled, c.sig); got != c.want {
				t.Fatalf("finishedStatus(%d, %v, %d) = %d, want %d", c.code, c.signaled, c.sig, got, c.want)
			}
		})
	}
}
