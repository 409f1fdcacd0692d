//go:build unix

package cli

import (
	"strings"
	"testing"
)

// envHint is how --help names an environment variable on this OS.
func envHint(name string) string { return "$" + name }

func TestNoProxyCases(t *testing.T) {
	t.Run("ORD-3b/no-proxy-and-lowercase-no-proxy-both-rules", func(t *testing.T) {
		// Two variables here; on Windows the names are one (host_windows_test.go).
		out, _, status := runCmd(t, DualProxy, []string{"NO_PROXY=upper.example", "no_proxy=lower.example"}, "--print-config")
		if status != 0 || !strings.Contains(out, "upper.example") || !strings.Contains(out, "lower.example") {
			t.Fatalf("status %d: want both NO_PROXY and no_proxy entries as rules:\n%s", status, out)
		}
	})
}
