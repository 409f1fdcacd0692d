package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// stoppedStatus is the exit status of a dual-proxy stopped by testworld's Instance.Stop:
// os.Process.Kill's (TerminateProcess; Windows has no SIGTERM to send another process).
const stoppedStatus = 1

// needCurl returns curl's path. Windows 10 1803 and later ship curl.exe; Wine 8.0 has none,
// so without it the test is skipped (the other end-to-end tests use testworld's fetch child).
func needCurl(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl.exe: Windows 10 1803+ ships one, Wine 8.0 does not")
	}
	return p
}

// envLabel is the source label --print-config gives a parent's proxy variable: Windows
// names ignore case, so each is listed once under its upper-case name (envrewrite ParentProxies).
func envLabel(name string) string { return strings.ToUpper(name) }

func TestWindowsLauncher(t *testing.T) {
	t.Run("RUN-3/exit-status-beyond-255-kept", func(t *testing.T) {
		// Windows exit codes are 32-bit: the child's code comes back whole, not modulo 256.
		_, errOut, status := launch(t, nil, runArgs(testworld.Child(t, "exit", "300"))...)
		if status != 300 {
			t.Fatalf("status %d, want 300 (stderr %q)", status, errOut)
		}
	})
	t.Run("SIG-2/job-object-ends-the-child-with-the-launcher", func(t *testing.T) {
		// The launcher terminated (TerminateProcess: no chance to clean up) closes its
		// kill-on-close Job object, which ends the child it was waiting for.
		pidFile := filepath.Join(t.TempDir(), "pid")
		cmd := exec.Command(bin, runArgs(testworld.Child(t, "pid-wait", pidFile))...)
		cmd.Env = baseEnv(t.TempDir())
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		defer func() { cmd.Process.Kill(); <-exited }()
		var pid int
		deadline := time.Now().Add(30 * time.Second)
		for pid == 0 {
			b, _ := os.ReadFile(pidFile)
			pid, _ = strconv.Atoi(string(b))
			if pid == 0 && time.Now().After(deadline) {
				t.Fatal("the child never wrote its pid")
			}
			time.Sleep(20 * time.Millisecond) // polling a file another process writes
		}
		child, err := os.FindProcess(pid) // opens a handle: the pid stays the child's
		if err != nil {
			t.Fatal(err)
		}
		childDone := make(chan struct{})
		var waitErr error
		go func() { _, waitErr = child.Wait(); close(childDone) }()
		select {
		case <-childDone:
			t.Fatalf("the child ended before the launcher (%v)", waitErr)
		case <-time.After(200 * time.Millisecond): // a check that it is still running, not a sync
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-childDone:
		case <-time.After(20 * time.Second):
			child.Kill()
			t.Fatal("the child outlived the terminated launcher by 20 s: no kill-on-close job")
		}
	})
}
