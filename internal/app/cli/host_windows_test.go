package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// envHint is how --help names an environment variable on this OS.
func envHint(name string) string { return "%" + name + "%" }

func TestNoProxyCases(t *testing.T) {
	t.Run("ORD-3b/no-proxy-any-case-is-one-variable", func(t *testing.T) {
		// Windows environment names ignore case: no_proxy and No_Proxy are NO_PROXY (PLAT-1).
		for _, name := range []string{"no_proxy", "No_Proxy"} {
			out, _, status := runCmd(t, DualProxy, []string{name + "=lower.example"}, "--print-config")
			if status != 0 || !strings.Contains(out, "lower.example") {
				t.Fatalf("%s: status %d: want its entry as a rule:\n%s", name, status, out)
			}
		}
	})
}

// fakeProgram makes an executable named name in dir, as exec.LookPath
// finds one here (by its PATHEXT extension).
func fakeProgram(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name+".exe"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
}
