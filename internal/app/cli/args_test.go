package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestUnexpectedArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"status-extra", []string{"status", "extra"}, `dual-proxy status: unexpected argument "extra": status takes no arguments`},
		{"status-flag-without-dashes", []string{"status", "json"}, "did you mean `dual-proxy status --json`?"},
		{"status-port", []string{"status", "7898"}, "did you mean `dual-proxy status --addr 7898`?"},
		{"status-host-port", []string{"status", "127.0.0.1:7896"}, "did you mean `dual-proxy status --addr 127.0.0.1:7896`?"},
		{"demo-extra", []string{"demo", "now"}, `dual-proxy demo: unexpected argument "now": demo takes no arguments`},
		{"completion-two", []string{"completion", "bash", "zsh"}, `unexpected argument "zsh": completion takes one argument (bash, zsh, fish, powershell)`},
		{"man-two", []string{"man", "dual-proxy", "x"}, `unexpected argument "x": man takes one argument (dual-proxy, claude-dual-proxy)`},
		// help reads its first word only: the others are errors.
		{"help-command-extra", []string{"help", "status", "json"}, `dual-proxy help: unexpected argument "json": help takes a command (dual-proxy help status)`},
		{"help-subcommand-extra", []string{"help", "pool", "test", "extra"}, `dual-proxy help: unexpected argument "extra": help takes a command (dual-proxy help pool test)`},
		{"help-help-extra", []string{"help", "help", "status"}, `dual-proxy help: unexpected argument "status": help takes a command (dual-proxy help COMMAND)`},
		// The word past MODEL is named, not only "want POOL MODEL".
		{"pool-test-three", []string{"pool", "test", "p", "m", "extra"}, `dual-proxy pool test: unexpected argument "extra": pool test takes POOL and MODEL`},
	} {
		t.Run("LIS-5/"+tc.name, func(t *testing.T) {
			out, errOut, status := runCmd(t, DualProxy, nil, tc.args...)
			if status != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || out != "" {
				t.Fatalf("%v: status %d, stderr %q, stdout %d bytes; want 2, one line with %q, no output", tc.args, status, errOut, len(out), tc.want)
			}
		})
	}
	t.Run("LIS-5/one-argument-still-works", func(t *testing.T) {
		if out, errOut, status := runCmd(t, DualProxy, nil, "completion", "bash"); status != 0 || !strings.Contains(out, "complete ") {
			t.Fatalf("status %d %q", status, errOut)
		}
	})
}

func TestHealthURLHelp(t *testing.T) {
	t.Run("HC-1/help-says-what-is-checked-and-how-to-change-it", func(t *testing.T) {
		out, _, status := runCmd(t, DualProxy, nil, "--help")
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "--health-url") {
				line = l
			}
		}
		for _, want := range []string{"GET this URL through each candidate", "every --health-interval-ms", "give the endpoint your agent uses", "('' = no check)", `(default: "https://api.deepseek.com")`} {
			if status != 0 || !strings.Contains(line, want) {
				t.Fatalf("status %d; --health-url's help lacks %q: %q", status, want, line)
			}
		}
	})
}

func TestPoolTestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown-flag-before-pool", []string{"pool", "test", "--bogus"}, "dual-proxy pool test: unknown flag --bogus; see dual-proxy pool test --help"},
		{"misspelt-flag-before-pool", []string{"pool", "test", "--jsn", "p", "m"}, "dual-proxy pool test: unknown flag --jsn; did you mean --json?"},
		{"misspelt-flag-after-model", []string{"pool", "test", "p", "m", "--jsn"}, "dual-proxy pool test: unknown flag --jsn; did you mean --json?"},
		{"flag-without-value", []string{"pool", "test", "--addr"}, "dual-proxy pool test: --addr needs a value"},
		// After POOL too, not Go's "flag needs an argument: --token".
		{"flag-without-value-after-pool", []string{"pool", "test", "p", "--token"}, "dual-proxy pool test: --token needs a value (--token VALUE or --token=VALUE)"},
	} {
		t.Run("LIS-5/"+tc.name, func(t *testing.T) {
			out, errOut, status := runCmd(t, DualProxy, nil, tc.args...)
			if status != 2 || !strings.HasPrefix(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || out != "" {
				t.Fatalf("%v: status %d, stderr %q, stdout %q; want 2 and one line %q (urfave/cli printed its whole help)", tc.args, status, errOut, out, tc.want)
			}
		})
	}
	t.Run("LIS-5/help-after-model-shows-the-help", func(t *testing.T) {
		out, _, status := runCmd(t, DualProxy, nil, "pool", "test", "p", "m", "--help")
		if status != 0 || !strings.Contains(out, "dual-proxy pool test POOL MODEL") {
			t.Fatalf("status %d:\n%s", status, out)
		}
	})
}

func TestHelpForSubcommand(t *testing.T) {
	t.Run("LIS-5/help-pool-test-shows-pool-test", func(t *testing.T) {
		out, errOut, status := runCmd(t, DualProxy, nil, "help", "pool", "test")
		if status != 0 || !strings.Contains(out, "dual-proxy pool test - send one real streaming call") || strings.Contains(out, "model pool tools") {
			t.Fatalf("status %d %q:\n%s", status, errOut, out)
		}
	})
	// `help help` is the program's help, not urfave/cli's bare page ("help -
	// Shows a list of commands…", no program name), unlike every other.
	t.Run("LIS-5/help-help-is-the-help", func(t *testing.T) {
		want, _, _ := runCmd(t, DualProxy, nil, "help")
		for _, args := range [][]string{{"help", "help"}, {"help", "h"}, {"h", "help"}, {"h", "h"}} {
			out, errOut, status := runCmd(t, DualProxy, nil, args...)
			if status != 0 || out != want || errOut != "" || !strings.HasPrefix(out, "NAME:\n   dual-proxy - ") {
				t.Fatalf("%v: status %d %q:\n%s", args, status, errOut, out)
			}
		}
		want, _, _ = runCmd(t, DualProxy, nil, "pool", "help")
		if out, errOut, status := runCmd(t, DualProxy, nil, "pool", "help", "help"); status != 0 || out != want || !strings.HasPrefix(out, "NAME:\n   dual-proxy pool - ") {
			t.Fatalf("pool help help: status %d %q:\n%s", status, errOut, out)
		}
	})
	t.Run("LIS-5/h-pool-test-shows-pool-test", func(t *testing.T) {
		out, errOut, status := runCmd(t, DualProxy, nil, "h", "pool", "test")
		if status != 0 || !strings.Contains(out, "dual-proxy pool test - send one real streaming call") {
			t.Fatalf("status %d %q:\n%s", status, errOut, out)
		}
	})
	t.Run("LIS-5/help-pool-unknown-is-still-an-unknown-command", func(t *testing.T) {
		if _, errOut, status := runCmd(t, DualProxy, nil, "help", "pool", "tst"); status != 2 || !strings.Contains(errOut, "did you mean `dual-proxy pool test`?") {
			t.Fatalf("status %d %q", status, errOut)
		}
	})
}

// TestStrayWordsAndDashDashValues: a word the command line cannot take is
// one line and exit 2, never the version or a help page (SPEC LIS-5,
// PLAT-2, POOL-14), run in-process with an empty registry: stray words
// after --version and help, a value-taking flag right before "--" and one
// given as --flag=--, and pool test's lists without a running instance.
func TestStrayWordsAndDashDashValues(t *testing.T) {
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
