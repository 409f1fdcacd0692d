package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/complete"
)

// testPoolConfig is a configuration with two pools (models in one) and
// two channels; its api_key_env variables are unset, which completion must
// not mind.
const testPoolConfig = `channels:
  ustc: {api: anthropic, base_url: "http://127.0.0.1:9", api_key_env: UNSET_KEY_A}
  kimi: {api: openai, base_url: "http://127.0.0.1:9", api_key_env: UNSET_KEY_B}
pools:
  work:
    members: [ustc]
    models:
      - id: flash
      - {id: pro}
  night: {members: [kimi]}
`

// writeConfig writes text to a config.yaml in a fresh directory.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCompletionValues(t *testing.T) {
	cfg := writeConfig(t, testPoolConfig)
	broken := writeConfig(t, "pools: [not closed\n")
	for _, tc := range []struct {
		name string
		prog func([]string, IO) int
		env  []string
		line []string // the words after the program; the last is the one being completed
		want string
	}{
		{"log-level", DualProxy, nil, []string{"--log-level", ""}, "debug info warn error"},
		{"log-level-prefix", DualProxy, nil, []string{"run", "--log-level", "w"}, "warn"},
		{"log-format", DualProxy, nil, []string{"--log-format", ""}, "text json"},
		{"launcher-log-level", Claude, nil, []string{"--log-level", "e"}, "error"},
		{"flag-value-then-commands", DualProxy, nil, []string{"--log-level", "debug", ""}, "run demo status settings pool completion man help"},
		{"help-topics", DualProxy, nil, []string{"help", ""}, "run demo status settings pool completion man"},
		{"help-offered", DualProxy, nil, []string{"he"}, "help"},
		{"run-pool-from-config-flag", DualProxy, nil, []string{"run", "--config", cfg, "--pool", ""}, "work night"},
		{"run-pool-from-config-equals", DualProxy, nil, []string{"run", "--config=" + cfg, "--pool", "n"}, "night"},
		{"launcher-pool-from-env", Claude, []string{"DUAL_PROXY_CONFIG=" + cfg}, []string{"--pool", ""}, "work night"},
		{"pool-test-pools", DualProxy, []string{"DUAL_PROXY_CONFIG=" + cfg}, []string{"pool", "test", ""}, "work night"},
		{"pool-test-models", DualProxy, []string{"DUAL_PROXY_CONFIG=" + cfg}, []string{"pool", "test", "work", ""}, "flash pro"},
		{"pool-test-after-model", DualProxy, []string{"DUAL_PROXY_CONFIG=" + cfg}, []string{"pool", "test", "work", "flash", ""}, ""},
		{"pool-test-flags-still", DualProxy, []string{"DUAL_PROXY_CONFIG=" + cfg}, []string{"pool", "test", "--js"}, "--json"},
		{"broken-config-offers-nothing", DualProxy, []string{"DUAL_PROXY_CONFIG=" + broken}, []string{"pool", "test", ""}, ""},
		{"missing-config-offers-nothing", DualProxy, nil, []string{"run", "--config", cfg + ".gone", "--pool", ""}, ""},
		{"bad-env-value-is-no-error", DualProxy, []string{"LISTEN_PORT=abc"}, []string{"st"}, "status"},
		{"child-words-offer-nothing", DualProxy, nil, []string{"run", "--", "--log-level", ""}, ""},
		{"powershell-empty-word", DualProxy, nil, []string{"--log-format", `""`}, "text json"},
	} {
		t.Run("LIS-5/"+tc.name, func(t *testing.T) {
			// (the default file's place per OS: TestCompletionDefaultConfig)
			args := append(append([]string(nil), tc.line...), complete.RequestFlag)
			out, errOut, status := runCmd(t, tc.prog, tc.env, args...)
			if got := strings.Join(strings.Fields(out), " "); status != 0 || got != tc.want || errOut != "" {
				t.Fatalf("%q: status %d, offers %q (stderr %q), want %q", tc.line, status, got, errOut, tc.want)
			}
		})
	}
}

func TestCompletionDefaultConfig(t *testing.T) {
	t.Run("LIS-5/pool-names-from-the-default-file", func(t *testing.T) {
		home := t.TempDir()
		env := []string{"XDG_CONFIG_HOME=" + home, "APPDATA=" + home, "HOME=" + home}
		p := defaultConfigFile(env)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(testPoolConfig), 0o600); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		completion.Answer(&b, dualProxyApp(IO{}), []string{"run", "--pool", ""}, env)
		if got := strings.Join(strings.Fields(b.String()), " "); got != "work night" {
			t.Fatalf("offers %q from %s, want the pools", got, p)
		}
	})
}
