package cli

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestIntFlagsNamesOnce: the int, bool, string and string-slice flags, whose
// names are computed once (namesOnce), keep urfave/cli's names and
// still take their value from the command line, the environment and the
// default (SPEC LIS-5).
func TestIntFlagsNamesOnce(t *testing.T) {
	t.Run("LIS-5/int-flags-names-values-env-default", func(t *testing.T) {
		for _, m := range []mode{modeServe, modeRun, modeClaude} {
			wrapped := map[string]int{}
			for _, f := range proxyFlags(m) {
				switch f.(type) {
				case *cli.IntFlag, *cli.BoolFlag, *cli.StringFlag, *cli.StringSliceFlag:
					t.Fatalf("mode %d: %s is a bare %T: urfave/cli recomputes its names on every look-up", m, f.Names()[0], f)
				}
				inner := unwrapFlag(f)
				if inner == f {
					continue
				}
				wrapped[fmt.Sprintf("%T", inner)]++
				var want []string
				switch v := inner.(type) {
				case *cli.IntFlag:
					want = cli.FlagNames(v.Name, v.Aliases)
				case *cli.BoolFlag:
					want = cli.FlagNames(v.Name, v.Aliases)
				case *cli.StringFlag:
					want = cli.FlagNames(v.Name, v.Aliases)
				case *cli.StringSliceFlag:
					want = cli.FlagNames(v.Name, v.Aliases)
				}
				if !slices.Equal(f.Names(), want) {
					t.Fatalf("%T %s: names %v, want %v", inner, want[0], f.Names(), want)
				}
			}
			if wrapped["*cli.IntFlag"] < 10 || wrapped["*cli.BoolFlag"] < 5 || wrapped["*cli.StringFlag"] < 8 || wrapped["*cli.StringSliceFlag"] < 1 {
				t.Fatalf("mode %d: wrapped %v", m, wrapped)
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
