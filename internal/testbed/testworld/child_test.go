package testworld

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runChild runs argv with env added to this process's and returns its stdout and exit status.
func runChild(t *testing.T, env []string, argv []string) (string, int) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	t.Logf("stderr: %s", stderr.String())
	return string(out), cmd.ProcessState.ExitCode()
}

// TestChild checks the stand-in child the launcher tests start instead of sh, true and curl
// (PLAT-1: the same tests run on Windows).
func TestChild(t *testing.T) {
	t.Run("PLAT-1/child-exit-status", func(t *testing.T) {
		if _, code := runChild(t, nil, Child(t, "exit", "7")); code != 7 {
			t.Fatalf("exit status %d, want 7", code)
		}
	})
	t.Run("PLAT-1/child-prints-env", func(t *testing.T) {
		out, code := runChild(t, []string{"TESTWORLD_A=a1", "TESTWORLD_B="}, Child(t, "env", "TESTWORLD_A", "TESTWORLD_B", "TESTWORLD_UNSET"))
		if code != 0 || out != "a1\n\n\n" {
			t.Fatalf("status %d, output %q", code, out)
		}
	})
	t.Run("PLAT-1/child-fetches-through-the-proxy-of-its-env", func(t *testing.T) {
		origin, gw := NewTLSOrigin(t), NewGateway(t)
		ca := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(ca, origin.CertPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		out, code := runChild(t, []string{"HTTPS_PROXY=http://" + gw.Addr}, Child(t, "fetch", "-cacert", ca, origin.URL+"/x"))
		if code != 0 || out != origin.Greeting() || gw.Connects() != 1 {
			t.Fatalf("status %d, output %q, gateway CONNECTs %d", code, out, gw.Connects())
		}
		if _, code := runChild(t, []string{"HTTPS_PROXY="}, Child(t, "fetch", origin.URL)); code != 22 {
			t.Fatalf("without a proxy: status %d, want 22", code)
		}
	})
	t.Run("PLAT-1/child-as-a-named-copy", func(t *testing.T) {
		argv := ChildAs(t, t.TempDir(), "claude", "touch", filepath.Join(t.TempDir(), "f"))
		if name := strings.TrimSuffix(filepath.Base(argv[0]), ".exe"); name != "claude" {
			t.Fatalf("copy named %q", name)
		}
		if _, code := runChild(t, nil, argv); code != 0 {
			t.Fatalf("status %d", code)
		}
		if _, err := os.Stat(argv[len(argv)-1]); err != nil {
			t.Fatal(err)
		}
	})
}
