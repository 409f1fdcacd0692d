package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestAttackRound6CLI: round six's checks of the command line that held
// (SPEC LIS-5, PLAT-2, POOL-14), run in-process with an empty registry:
// stray words after --version and help, a value-taking flag right before
// "--" and one given as --flag=--, and pool test's lists without a
// running instance.
func TestAttackRound6CLI(t *testing.T) {
	env := func(t *testing.T) []string {
		d := t.TempDir()
		return []string{"XDG_RUNTIME_DIR=" + filepath.Join(d, "run"), "XDG_CONFIG_HOME=" + filepath.Join(d, "cfg"), "XDG_STATE_HOME=" + filepath.Join(d, "state")}
	}
	for _, c := range []struct {
		name   string
		args   []string
		status int
		errHas string
	}{
		{"LIS-5/version-with-a-word-after-dashdash", []string{"--version", "--", "x"}, 2, `unexpected argument "x"`},
		{"LIS-5/version-after-a-flag-with-a-word", []string{"--listen-port", "5", "--version", "x"}, 2, `unexpected argument "x"`},
		{"LIS-5/help-of-a-command-with-a-stray-word", []string{"help", "run", "extra"}, 2, ""},
		{"LIS-5/help-of-no-command", []string{"--help", "nope"}, 2, `"nope" is no command`},
		{"LIS-5/flag-equals-dashdash-is-a-value", []string{"run", "--listen-port=--", "--", "true"}, 2, `want a whole number, got "--"`},
		{"LIS-5/flag-before-dashdash-needs-a-value", []string{"run", "--listen-port", "--", "--", "true"}, 2, "--listen-port needs a value"},
		{"POOL-14/pool-test-extra-argument", []string{"pool", "test", "p", "m", "extra"}, 2, `unexpected argument "extra"`},
		{"POOL-14/pool-list-without-an-instance", []string{"pool", "test", "--addr", "127.0.0.1:1"}, 1, "cannot be listed"},
		{"POOL-14/pool-models-without-an-instance", []string{"pool", "test", "p", "--addr", "127.0.0.1:1"}, 1, "cannot be listed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, status := runCmd(t, DualProxy, env(t), c.args...)
			if status != c.status || !strings.Contains(errOut, c.errHas) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Fatalf("%v: status %d (want %d), stdout %q, stderr %q (want one line with %q)", c.args, status, c.status, out, errOut, c.errHas)
			}
			if strings.Contains(out, "version") {
				t.Fatalf("%v printed the version: %q", c.args, out)
			}
		})
	}
}
