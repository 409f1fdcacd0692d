package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Each usage message that says what to type instead (SPEC LIS-5),
// asserted by its text.
func TestHelpfulMessages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      func([]string, IO) int
		env    []string
		args   []string
		status int
		want   string
	}{
		{"LIS-5/wrapper-flag-before-dashdash-shows-corrected-command", Claude, nil,
			[]string{"-p", "hi there"}, 2,
			"claude-dual-proxy: -p is not a claude-dual-proxy flag; arguments for claude go after --: claude-dual-proxy -- -p 'hi there'\n"},
		{"LIS-5/wrapper-flags-stay-in-front", Claude, nil,
			[]string{"--cooldown-ms", "10", "--print", "hi"}, 2,
			"claude-dual-proxy: --print is not a claude-dual-proxy flag; arguments for claude go after --: claude-dual-proxy --cooldown-ms 10 -- --print hi\n"},
		{"LIS-5/typo-did-you-mean", DualProxy, nil,
			[]string{"--gatway", "127.0.0.1:1"}, 2,
			"dual-proxy: unknown flag --gatway; did you mean --gateway?\n"},
		{"LIS-5/typo-did-you-mean-launcher", Claude, nil,
			[]string{"--gatway", "127.0.0.1:1"}, 2,
			"claude-dual-proxy: unknown flag --gatway; did you mean --gateway? (claude's own flags go after --)\n"},
		{"LIS-5/typo-in-subcommand-flag", DualProxy, nil,
			[]string{"status", "--adr", "1"}, 2,
			"dual-proxy status: unknown flag --adr; did you mean --addr?\n"},
		{"LIS-5/run-flag-before-command", DualProxy, nil,
			[]string{"run", "-v", "curl"}, 2,
			"dual-proxy run: -v is not a dual-proxy run flag; the command and its flags go after --: dual-proxy run [flags] -- CMD [ARGS...]\n"},
		{"LIS-5/unknown-flag-no-suggestion", DualProxy, nil,
			[]string{"--frobnicate"}, 2,
			"dual-proxy: unknown flag --frobnicate; see dual-proxy --help\n"},
		{"LIS-5/command-typo-did-you-mean", DualProxy, nil,
			[]string{"sttaus"}, 2,
			"dual-proxy: unknown command \"sttaus\"; did you mean `dual-proxy status`?\n"},
		{"LIS-5/unknown-command-lists-commands", DualProxy, []string{"PATH=/nonexistent"},
			[]string{"frobnicate", "x"}, 2,
			"dual-proxy: unknown command \"frobnicate\" (commands: completion, demo, help, man, pool, run, settings, status)\n"},
		{"LIS-5/unknown-agent-command-gets-the-run-form", DualProxy, []string{"PATH=/nonexistent"},
			[]string{"claude", "-p", "hi there"}, 2,
			"dual-proxy: unknown command \"claude\"; to run claude behind the proxy: dual-proxy run -- claude -p 'hi there'\n"},
		{"LIS-5/version-command-names-the-flag", DualProxy, nil,
			[]string{"version"}, 2,
			"dual-proxy: unknown command \"version\"; the version is a flag: dual-proxy --version\n"},
		{"LIS-5/pool-subcommand-typo-did-you-mean", DualProxy, nil,
			[]string{"pool", "tset", "p", "m"}, 2,
			"dual-proxy pool: unknown command \"tset\"; did you mean `dual-proxy pool test`?\n"},
		{"LIS-5/pool-unknown-subcommand-lists-them", DualProxy, nil,
			[]string{"pool", "xyzzy"}, 2,
			"dual-proxy pool: unknown command \"xyzzy\" (commands: test, help)\n"},
		{"LIS-5/help-topic-typo-did-you-mean", DualProxy, nil,
			[]string{"help", "stauts"}, 2,
			"dual-proxy help: \"stauts\" is no command; did you mean `dual-proxy help status`?\n"},
		{"LIS-5/help-unknown-topic-names-the-topics-not-run", DualProxy, nil,
			[]string{"help", "nope"}, 2,
			"dual-proxy help: \"nope\" is no command (help topics: completion, demo, help, man, pool, run, settings, status)\n"},
		{"LIS-5/help-flag-unknown-topic-names-the-topics", DualProxy, nil,
			[]string{"--help", "nope"}, 2,
			"dual-proxy help: \"nope\" is no command (help topics: completion, demo, help, man, pool, run, settings, status)\n"},
		{"LIS-5/version-flag-with-a-word-exits-2", DualProxy, nil,
			[]string{"--version", "extra"}, 2,
			"dual-proxy: unexpected argument \"extra\": --version takes no arguments (dual-proxy --version)\n"},
		{"LIS-5/version-flag-before-a-command-exits-2", DualProxy, nil,
			[]string{"-v", "status"}, 2,
			"dual-proxy: unexpected argument \"status\": --version takes no arguments (dual-proxy --version)\n"},
		{"LIS-5/launcher-version-flag-with-a-word-exits-2", Claude, nil,
			[]string{"--version", "extra"}, 2,
			"claude-dual-proxy: unexpected argument \"extra\": --version takes no arguments (claude-dual-proxy --version)\n"},
		{"LIS-5/bad-number-names-the-flag", DualProxy, nil,
			[]string{"--listen-port=abc"}, 2,
			"dual-proxy: --listen-port: want a whole number, got \"abc\"\n"},
		{"LIS-5/bad-number-in-subcommand", DualProxy, nil,
			[]string{"status", "--decisions", "x"}, 2,
			"dual-proxy status: --decisions: want a whole number, got \"x\"\n"},
		{"LIS-5/bad-boolean-names-the-flag", DualProxy, nil,
			[]string{"run", "--loopback-direct=maybe", "--", "true"}, 2,
			"dual-proxy run: --loopback-direct: want true or false, got \"maybe\"\n"},
		{"LIS-5/bad-log-format-names-the-value", DualProxy, nil,
			[]string{"--log-format", "xml"}, 2,
			"dual-proxy: --log-format: want text or json\n"},
		{"LIS-5/flag-value-missing-before-dashdash", DualProxy, nil,
			[]string{"run", "--pool", "--", "true"}, 2,
			"dual-proxy run: --pool needs a value (--pool VALUE or --pool=VALUE), not the -- that ends the flags\n"},
		{"LIS-5/launcher-flag-value-missing-before-dashdash", Claude, nil,
			[]string{"--command", "--", "-p", "hi"}, 2,
			"claude-dual-proxy: --command needs a value (--command VALUE or --command=VALUE), not the -- that ends the flags\n"},
		{"LIS-5/dashdash-after-a-bool-flag-is-the-separator", DualProxy, []string{"PATH=/nonexistent"},
			[]string{"run", "--no-verify-tls", "--", "/nonexistent/agent"}, 127,
			"dual-proxy: /nonexistent/agent: command not found\n"},
		{"LIS-5/flag-without-value", DualProxy, nil,
			[]string{"--pool-token"}, 2,
			"dual-proxy: --pool-token needs a value (--pool-token VALUE or --pool-token=VALUE)\n"},
		{"LIS-5/gateway-without-port", DualProxy, nil,
			[]string{"--gateway", "proxy.corp", "--print-config"}, 2,
			"dual-proxy: --gateway: a gateway has no port (want host:port, e.g. proxy.corp:8080, or an http:// URL)\n"},
		{"LIS-5/gateway-without-port-never-echoes-password", DualProxy, nil,
			[]string{"--gateway", "u:hunter2@proxy.corp", "--print-config"}, 2,
			"dual-proxy: --gateway: a gateway has no port (want [user:pass@]host:port or an http:// URL)\n"},
		{"RUN-3/command-not-found-install-hint", Claude, []string{"PATH=/nonexistent"},
			[]string{"--command", "claude", "--", "-p", "hi"}, 127,
			"claude-dual-proxy: claude: command not found (install Claude Code: npm install -g @anthropic-ai/claude-code; or point --command (CLAUDE_COMMAND) at the executable)\n"},
		{"RUN-3/command-not-found-codex", DualProxy, nil,
			[]string{"run", "--", "/nonexistent/codex", "exec"}, 127,
			"dual-proxy: /nonexistent/codex: command not found (install Codex: npm install -g @openai/codex)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.env) > 0 {
				k, v, _ := strings.Cut(tc.env[0], "=")
				t.Setenv(k, v) // exec.LookPath reads the process PATH
			}
			_, errOut, status := runCmd(t, tc.f, tc.env, tc.args...)
			if status != tc.status || errOut != tc.want {
				t.Fatalf("status %d, stderr\n%q\nwant %d\n%q", status, errOut, tc.status, tc.want)
			}
		})
	}
}

// `dual-proxy PROG ARGS` for a program on PATH gets the `run --` form with
// its arguments; `help PROG` does not (help shows commands' help), and a
// word that is no program gets the command list only (SPEC LIS-5).
func TestUnknownCommandRunForm(t *testing.T) {
	dir := t.TempDir()
	fakeProgram(t, dir, "myagent")
	t.Setenv("PATH", dir) // exec.LookPath reads the process PATH, as run's does
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"LIS-5/program-on-path-gets-the-run-form", []string{"myagent", "--flag", "a b"},
			"dual-proxy: unknown command \"myagent\"; to run myagent behind the proxy: dual-proxy run -- myagent --flag 'a b'\n"},
		{"LIS-5/help-for-a-program-is-no-topic", []string{"help", "myagent"},
			"dual-proxy help: \"myagent\" is no command (help topics: completion, demo, help, man, pool, run, settings, status)\n"},
		{"LIS-5/no-program-no-run-form", []string{"nope"},
			"dual-proxy: unknown command \"nope\" (commands: completion, demo, help, man, pool, run, settings, status)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, status := runCmd(t, DualProxy, []string{"PATH=" + dir}, tc.args...)
			if status != 2 || errOut != tc.want {
				t.Fatalf("status %d, stderr\n%q\nwant\n%q", status, errOut, tc.want)
			}
		})
	}
	t.Run("PLAT-2/version-flag-alone-prints-the-version", func(t *testing.T) {
		out, errOut, status := runCmd(t, DualProxy, nil, "--version")
		if status != 0 || !strings.HasPrefix(out, "dual-proxy version ") || errOut != "" {
			t.Fatalf("status %d out %q err %q", status, out, errOut)
		}
	})
}

// A bad value from the environment is reported under the variable's name
// (another tool's LOG_LEVEL=trace), the same value on the command line under
// the flag's.
func TestEnvValueNamed(t *testing.T) {
	t.Run("LIS-5/env-var-named-not-flag", func(t *testing.T) {
		t.Setenv("LOG_LEVEL", "trace")
		_, errOut, status := runCmd(t, DualProxy, []string{"LOG_LEVEL=trace"}, "--print-config")
		if want := "dual-proxy: environment variable LOG_LEVEL (--log-level): want debug, info, warn or error\n"; status != 2 || errOut != want {
			t.Fatalf("status %d %q", status, errOut)
		}
	})
	t.Run("LIS-5/flag-on-command-line-named-as-flag", func(t *testing.T) {
		t.Setenv("LOG_LEVEL", "trace")
		_, errOut, status := runCmd(t, DualProxy, []string{"LOG_LEVEL=trace"}, "--log-level", "loud", "--print-config")
		if want := "dual-proxy: --log-level: want debug, info, warn or error\n"; status != 2 || errOut != want {
			t.Fatalf("status %d %q", status, errOut)
		}
	})
	t.Run("LIS-5/unparsable-env-number", func(t *testing.T) {
		t.Setenv("LISTEN_PORT", "abc")
		_, errOut, status := runCmd(t, DualProxy, []string{"LISTEN_PORT=abc"}, "--print-config")
		if want := "dual-proxy: environment variable LISTEN_PORT (--listen-port): want a whole number, got \"abc\"\n"; status != 2 || errOut != want {
			t.Fatalf("status %d %q", status, errOut)
		}
	})
	t.Run("LIS-5/completion-with-unparsable-env-number", func(t *testing.T) {
		// A bad LISTEN_PORT used to make urfave/cli dereference a nil
		// flag set: every TAB printed a Go panic into the shell.
		for _, env := range []string{"LISTEN_PORT", "UPSTREAM_PORT", "HEAD_TIMEOUT_MS"} {
			t.Setenv(env, "abc")
		}
		// The run must end normally instead of panicking (the scripts
		// pass the word being completed, "" for none, before the flag).
		for _, args := range [][]string{{"--generate-bash-completion"}, {"pool", "", "--generate-bash-completion"}, {"run", "", "--generate-bash-completion"}} {
			_, errOut, status := runCmd(t, DualProxy, []string{"LISTEN_PORT=abc"}, args...)
			if status != 0 || errOut != "" {
				t.Fatalf("%v: status %d err %q", args, status, errOut)
			}
		}
		self, err := os.Executable() // standing in for dual-proxy, see TestMain
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, "pool", "", "--generate-bash-completion")
		cmd.Env = []string{"DUAL_PROXY_TEST_MAIN=dual-proxy", "HOME=" + t.TempDir(), "LISTEN_PORT=abc", "UPSTREAM_PORT=x"}
		if out, err := cmd.CombinedOutput(); err != nil || string(out) != "test\n" {
			t.Fatalf("pool completion with LISTEN_PORT=abc: %v %q", err, out)
		}
		_, errOut, status := runCmd(t, Claude, []string{"LISTEN_PORT=abc"}, "--generate-bash-completion")
		if status != 0 || errOut != "" {
			t.Fatalf("claude-dual-proxy: status %d err %q", status, errOut)
		}
	})
	t.Run("LIS-5/gateway-env-without-port", func(t *testing.T) {
		t.Setenv("GATEWAY", "10.0.0.3")
		_, errOut, status := runCmd(t, DualProxy, []string{"GATEWAY=10.0.0.3"}, "--print-config")
		if want := "dual-proxy: environment variable GATEWAY (--gateway): a gateway has no port (want host:port, e.g. 10.0.0.3:8080, or an http:// URL)\n"; status != 2 || errOut != want {
			t.Fatalf("status %d %q", status, errOut)
		}
	})
}

func TestUnknownPoolListsPools(t *testing.T) {
	t.Run("POOL-20/unknown-pool-lists-valid-ones", func(t *testing.T) {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "c.yaml")
		yaml := "channels:\n  a: {api: anthropic, base_url: \"http://127.0.0.1:9\", api_key: sk-x}\npools:\n  work: {members: [a]}\n  home: {members: [a]}\n"
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, errOut, status := runCmd(t, Claude, nil, "--config", cfg, "--pool", "wrok", "--print-config")
		if want := fmt.Sprintf("claude-dual-proxy: --pool: no pool \"wrok\" in %s (pools: work, home)\n", cfg); status != 2 || errOut != want {
			t.Fatalf("status %d %q", status, errOut)
		}
		// POOL-20: --print-config names the pool the child will be put on.
		out, errOut, status := runCmd(t, Claude, nil, "--config", cfg, "--pool", "home", "--print-config")
		if status != 0 || !regexp.MustCompile(`(?m)^pool:\s+home$`).MatchString(out) {
			t.Fatalf("status %d %q, no 'pool: home' line in\n%s", status, errOut, out)
		}
	})
}

func TestConfigErrorsAllAtOnce(t *testing.T) {
	t.Run("POOL-3/every-config-error-with-file-line-column", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "c.yaml")
		yaml := "channels:\n  a: {api: anthropic, base_url: \"http://127.0.0.1:9\", api_key: sk-x, colour: red}\npools:\n  work: {members: [a, b], stratgy: sticky}\n  work: {members: [a]}\n"
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, errOut, status := runCmd(t, DualProxy, nil, "--config", cfg, "--print-config")
		want := "dual-proxy: --config: " + cfg + ":2:70: channels.a.colour: unknown key (known: api, base_url, api_key_env, api_key, auth, models, cache_breakpoints)\n" +
			"  " + cfg + ":4:23: pools.work.members[1]: unknown channel \"b\"\n" +
			"  " + cfg + ":4:27: pools.work.stratgy: unknown key (did you mean strategy?)\n" +
			"  " + cfg + ":5:3: pools.work: duplicate key (first at line 4)\n"
		if status != 2 || errOut != want {
			t.Fatalf("status %d\n%s\nwant\n%s", status, errOut, want)
		}
	})
}

func TestNoConfigYet(t *testing.T) {
	t.Run("POOL-22/pool-token-without-a-file-serves-an-empty-pool-to-create-it", func(t *testing.T) {
		dir := t.TempDir()
		env := []string{"XDG_CONFIG_HOME=" + dir, "APPDATA=" + dir} // the default path's base on unix and Windows
		out, errOut, status := runCmd(t, DualProxy, env, "--pool-token", "t", "--print-config")
		if status != 0 || !strings.Contains(out, "pool config: "+dir) || !strings.Contains(out, "config.yaml (not yet created: the pool page's editor creates it)") {
			t.Fatalf("status %d %q\n%s", status, errOut, out)
		}
		out, _, _ = runCmd(t, DualProxy, env, "--print-config")
		if !strings.Contains(out, "pools: (none)") {
			t.Fatalf("without a token: no pool expected\n%s", out)
		}
	})
}

// TestExampleConfig loads contrib/config.example.yaml through the real
// --config path, its key variables set.
func TestExampleConfig(t *testing.T) {
	t.Run("POOL-3/contrib-example-config-is-valid", func(t *testing.T) {
		path := filepath.Join("..", "..", "..", "contrib", "config.example.yaml")
		env := []string{"DEEPSEEK_KEY=sk-a", "CAMPUS_KEY=sk-b", "OPENAI_A_KEY=sk-c", "OPENAI_B_KEY=sk-d"}
		out, errOut, status := runCmd(t, DualProxy, env, "--config", path, "--print-config")
		if status != 0 || !strings.Contains(out, "claude-pool") || !strings.Contains(out, "codex-pool") {
			t.Fatalf("status %d %q\n%s", status, errOut, out)
		}
	})
}

func TestDefaultConfigErrorNote(t *testing.T) {
	t.Run("POOL-3/default-config-error-says-every-command-reads-it", func(t *testing.T) {
		dir := t.TempDir()
		env := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir, "APPDATA=" + dir}
		path := defaultConfigFile(env)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		body := "channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:1, api_key_env: DUAL_PROXY_TEST_UNSET_KEY}\npools:\n  p: {members: [a]}\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		// A launcher with --pool needs the file: the error must say
		// which file stops it and what to do.
		_, errOut, status := runCmdEnv(t, DualProxy, env, "run", "--pool", "p", "--print-config", "--", "true")
		note := "(" + path + " is the default pool configuration, read when no --config is given;"
		if status != 2 || !strings.Contains(errOut, "DUAL_PROXY_TEST_UNSET_KEY is empty or unset") || !strings.Contains(errOut, note) {
			t.Fatalf("status %d\n%s", status, errOut)
		}
		// The standalone proxy serves the pools: stopped too.
		_, errOut, status = runCmdEnv(t, DualProxy, env, "--print-config")
		if status != 2 || !strings.Contains(errOut, note) {
			t.Fatalf("standalone: status %d\n%s", status, errOut)
		}
		t.Run("POOL-3/launcher-without-pool-runs-without-a-broken-default-file", func(t *testing.T) {
			out, errOut, status := runCmdEnv(t, DualProxy, env, "run", "--print-config", "--", "true")
			want := "(" + path + " is the default pool configuration: this launcher runs without its pools;"
			if status != 0 || !strings.Contains(errOut, "warning: ") || !strings.Contains(errOut, "DUAL_PROXY_TEST_UNSET_KEY is empty or unset") || !strings.Contains(errOut, want) {
				t.Fatalf("status %d\nstderr %s\nstdout %s", status, errOut, out)
			}
		})
		// A child that cannot be found is said first and alone: the
		// warning about the default file would bury it (RUN-3).
		t.Run("RUN-3/child-not-found-said-first-and-alone", func(t *testing.T) {
			for _, tc := range []struct {
				f    func([]string, IO) int
				args []string
				want string
			}{
				{DualProxy, []string{"run", "--health-url", "", "--", "dual-proxy-test-no-such-command"}, "dual-proxy: dual-proxy-test-no-such-command: command not found\n"},
				{Claude, []string{"--health-url", "", "--command", filepath.Join(dir, "no-such-claude-wrapper"), "--", "-p", "hi"},
					"claude-dual-proxy: " + filepath.Join(dir, "no-such-claude-wrapper") + ": command not found (or point --command (CLAUDE_COMMAND) at the executable)\n"},
			} {
				_, errOut, status := runCmdEnv(t, tc.f, env, tc.args...)
				if status != 127 || errOut != tc.want {
					t.Fatalf("%v: status %d stderr\n%s\nwant only\n%s", tc.args, status, errOut, tc.want)
				}
			}
		})
		// Named with --config: the user chose the file, no note.
		_, errOut, status = runCmdEnv(t, DualProxy, env, "--config", path, "--print-config")
		if status != 2 || strings.Contains(errOut, "default pool configuration") {
			t.Fatalf("status %d\n%s", status, errOut)
		}
	})
}
