//go:build linux

package signals

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExitStatusMapping(t *testing.T) {
	exitErr := func(script string) error {
		err := exec.Command("sh", "-c", script).Run()
		if err == nil {
			t.Fatalf("sh -c %q succeeded", script)
		}
		return err
	}
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"RUN-3/nil-is-0", nil, 0},
		{"RUN-3/exit-code", exitErr("exit 42"), 42},
		{"RUN-3/exit-255", exitErr("exit 255"), 255},
		{"RUN-3/sigterm-143", exitErr("kill -TERM $$"), 143},
		{"RUN-3/sigkill-137", exitErr("kill -KILL $$"), 137},
		{"RUN-3/lookup-not-found-127", &exec.Error{Name: "x", Err: exec.ErrNotFound}, 127},
		{"RUN-3/enoent-127", &fs.PathError{Op: "fork/exec", Path: "/x", Err: syscall.ENOENT}, 127},
		{"RUN-3/eacces-126", &fs.PathError{Op: "fork/exec", Path: "/x", Err: syscall.EACCES}, 126},
		{"RUN-3/enoexec-126", &fs.PathError{Op: "fork/exec", Path: "/x", Err: syscall.ENOEXEC}, 126},
		{"RUN-3/lookup-permission-126", &exec.Error{Name: "x", Err: fs.ErrPermission}, 126},
		{"RUN-3/errdot-126", &exec.Error{Name: "x", Err: exec.ErrDot}, 126},
		{"RUN-3/other-1", errors.New("no pty"), 1},
		{"RUN-3/wrapped", fmt.Errorf("start: %w", &exec.Error{Name: "x", Err: exec.ErrNotFound}), 127},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ExitStatus(c.err); got != c.want {
				t.Fatalf("ExitStatus(%v) = %d, want %d", c.err, got, c.want)
			}
		})
	}
}

// TestLauncherStatus runs the real launcher process (plain mode: its stdin is /dev/null).
func TestLauncherStatus(t *testing.T) {
	dir := t.TempDir()
	noExec := filepath.Join(dir, "noexec.sh")
	if err := os.WriteFile(noExec, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badFormat := filepath.Join(dir, "garbage")
	if err := os.WriteFile(badFormat, []byte("\x00\x01\x02\x03 not an executable"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"RUN-3/exit-42", []string{"sh", "-c", "exit 42"}, 42},
		{"RUN-3/exit-0", []string{"true"}, 0},
		{"RUN-3/killed-by-sigterm-143", []string{"sh", "-c", "kill -TERM $$"}, 143},
		{"RUN-3/killed-by-sigkill-137", []string{"sh", "-c", "kill -KILL $$"}, 137},
		{"RUN-3/unknown-command-127", []string{"no-such-command-dual-proxy-test"}, 127},
		{"RUN-3/missing-path-127", []string{filepath.Join(dir, "missing")}, 127},
		{"RUN-3/not-executable-126", []string{noExec}, 126},
		{"RUN-3/directory-126", []string{dir}, 126},
		{"RUN-3/exec-format-error-126", []string{badFormat}, 126},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := launcher(t, nil, c.args...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if got := exitCode(t, cmd, 10*time.Second); got != c.want {
				t.Fatalf("launcher -- %v: status %d, want %d", c.args, got, c.want)
			}
		})
	}
}

func TestPlainModePipes(t *testing.T) {
	t.Run("SIG-1/plain-stdin-pipe-to-cat", func(t *testing.T) {
		cmd := launcher(t, nil, "cat")
		cmd.Stdin = strings.NewReader("data\n")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("launcher -- cat: %v", err)
		}
		if string(out) != "data\n" {
			t.Fatalf("output %q, want %q", out, "data\n")
		}
	})
	t.Run("RUN-3/plain-status-preserved", func(t *testing.T) {
		cmd := launcher(t, nil, "sh", "-c", "cat; echo err >&2; exit 5")
		cmd.Stdin = strings.NewReader("piped\n")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if got := ExitStatus(err); got != 5 {
			t.Fatalf("status %d (%v), want 5", got, err)
		}
		if string(out) != "piped\n" || stderr.String() != "err\n" {
			t.Fatalf("stdout %q stderr %q", out, stderr.String())
		}
	})
}
