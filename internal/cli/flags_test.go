package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestIntFlagsNamesOnce: the int flags, whose names are computed once
// (intFlag, issue 20), keep urfave/cli's names and still take their value
// from the command line, the environment and the default (SPEC LIS-5).
func TestIntFlagsNamesOnce(t *testing.T) {
	t.Run("LIS-5/int-flags-names-values-env-default", func(t *testing.T) {
		for _, m := range []mode{modeServe, modeRun, modeClaude} {
			ints := 0
			for _, f := range proxyFlags(m) {
				if _, raw := f.(*cli.IntFlag); raw {
					t.Fatalf("mode %d: %s is a bare *cli.IntFlag", m, f.Names()[0])
				}
				if v, ok := f.(intFlag); ok {
					ints++
					if want := cli.FlagNames(v.Name, v.Aliases); !slices.Equal(v.Names(), want) {
						t.Fatalf("%s: names %v, want %v", v.Name, v.Names(), want)
					}
				}
			}
			if ints < 10 {
				t.Fatalf("mode %d: %d int flags wrapped", m, ints)
			}
		}
		t.Setenv("KILL_AFTER_MS", "1234") // urfave/cli reads EnvVars from the process environment
		out, _, status := runCmdEnv(t, DualProxy, []string{"HOME=" + t.TempDir()},
			"run", "--listen-port", "5", "--print-config", "--", "true")
		for _, want := range []string{"127.0.0.1:5\n", "1234\n", "10\n"} { // flag, env, default (port-fallback)
			if status != 0 || !strings.Contains(out, want) {
				t.Fatalf("status %d, %q not in:\n%s", status, want, out)
			}
		}
	})
}
