package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPortRangeInEverySource: a port outside 1-65535 in --pool-state (or
// DUAL_PROXY_POOL_STATE), with a pool configuration or without one, and
// in --health-url (or HEALTH_URL) exits 2 naming the flag or the
// variable and the range (SPEC POOL-23, OPS-7).
func TestPortRangeInEverySource(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	yaml := "channels:\n  a: {api: anthropic, base_url: \"http://127.0.0.1:9\", api_key: sk-x}\npools:\n  work: {members: [a]}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	refused := func(t *testing.T, errOut string, status int, names string) {
		t.Helper()
		if status != 2 || !strings.Contains(errOut, names) || !strings.Contains(errOut, "1-65535") {
			t.Fatalf("status %d: %q", status, errOut)
		}
	}
	t.Run("POOL-23/pool-state-flag-port-99999-exit-2", func(t *testing.T) {
		_, errOut, status := runCmd(t, DualProxy, nil, "--config", cfg, "--pool-state", "redis://127.0.0.1:99999/0", "--print-config")
		refused(t, errOut, status, "--pool-state")
	})
	t.Run("POOL-23/pool-state-flag-port-99999-exit-2-without-pools", func(t *testing.T) {
		_, errOut, status := runCmd(t, DualProxy, nil, "--pool-state", "redis://127.0.0.1:99999/0", "--print-config")
		refused(t, errOut, status, "--pool-state")
	})
	t.Run("POOL-23/DUAL_PROXY_POOL_STATE-port-0-exit-2", func(t *testing.T) {
		t.Setenv("DUAL_PROXY_POOL_STATE", "redis://127.0.0.1:0/0")
		_, errOut, status := runCmd(t, DualProxy, []string{"DUAL_PROXY_POOL_STATE=redis://127.0.0.1:0/0"}, "--config", cfg, "--print-config")
		refused(t, errOut, status, "environment variable DUAL_PROXY_POOL_STATE (--pool-state)")
	})
	t.Run("POOL-23/config-state-port-99999-exit-2", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(bad, []byte(yaml+"state: redis://127.0.0.1:99999/0\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, errOut, status := runCmd(t, DualProxy, nil, "--config", bad, "--print-config")
		refused(t, errOut, status, "state")
	})
	t.Run("OPS-7/health-url-flag-port-99999-exit-2", func(t *testing.T) {
		_, errOut, status := runCmd(t, DualProxy, nil, "--health-url", "http://127.0.0.1:99999/", "--print-config")
		refused(t, errOut, status, "--health-url")
	})
	t.Run("OPS-7/HEALTH_URL-port-0-exit-2", func(t *testing.T) {
		t.Setenv("HEALTH_URL", "https://127.0.0.1:0/")
		_, errOut, status := runCmd(t, DualProxy, []string{"HEALTH_URL=https://127.0.0.1:0/"}, "--print-config")
		refused(t, errOut, status, "environment variable HEALTH_URL (--health-url)")
	})
}
