//go:build unix

package cli

import (
	"os"
	"path/filepath"
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

// fakeProgram makes an executable named name in dir, as exec.LookPath
// finds one here.
func fakeProgram(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}
