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
