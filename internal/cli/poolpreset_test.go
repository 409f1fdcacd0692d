package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/envrewrite"
)

func TestPoolAgentPresets(t *testing.T) {
	s := &Settings{PoolName: "p", AgentPresets: true}
	env := []string{"HOME=/h", "XDG_RUNTIME_DIR=" + t.TempDir(), "GOOGLE_API_KEY=AIza-real"}
	t.Run("POOL-20/POOL-21/every-agent-variable-for-any-command", func(t *testing.T) {
		out, argv, cleanup := poolChild(s, "tok", 7896, env, []string{"aider"})
		defer cleanup()
		for k, want := range map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:7896/pool/p", "OPENAI_BASE_URL": "http://127.0.0.1:7896/pool/p/v1",
			"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:7896/pool/p", "GEMINI_API_KEY": "tok", "OPENAI_API_KEY": "tok", "ANTHROPIC_AUTH_TOKEN": "tok"} {
			if got, _ := envrewrite.Get(out, k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		if _, ok := envrewrite.Get(out, "GOOGLE_API_KEY"); ok || len(argv) != 1 {
			t.Fatalf("GOOGLE_API_KEY kept or argv changed: %q %q", out, argv)
		}
	})
	t.Run("POOL-20/base-url-escapes-the-pool-id", func(t *testing.T) {
		// A pool the configuration accepts and serves; the raw id made
		// ANTHROPIC_BASE_URL=…/pool/50%off a#b, which a client answered with
		// 400 or cut at '#'.
		odd := &Settings{PoolName: "50%off a#b", AgentPresets: true}
		out, _, cleanup := poolChild(odd, "tok", 7896, env, []string{"qwen"})
		defer cleanup()
		for k, want := range map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:7896/pool/50%25off%20a%23b",
			"OPENAI_BASE_URL": "http://127.0.0.1:7896/pool/50%25off%20a%23b/v1", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:7896/pool/50%25off%20a%23b"} {
			if got, _ := envrewrite.Get(out, k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
	})
	t.Run("POOL-20/gemini-preset-selects-api-key-auth", func(t *testing.T) {
		out, _, cleanup := poolChild(s, "tok", 7896, env, []string{"/usr/bin/gemini", "-p", "hi"})
		path, _ := envrewrite.Get(out, "GEMINI_CLI_SYSTEM_SETTINGS_PATH")
		runtime, _ := envrewrite.Get(env, "XDG_RUNTIME_DIR")
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasPrefix(path, runtime) || string(b) != geminiSettings {
			t.Fatalf("settings %q: %q %v", path, b, err)
		}
		cleanup()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("preset file left behind: %v", err)
		}
	})
	t.Run("POOL-20/opencode-preset-inline-config", func(t *testing.T) {
		out, _, cleanup := poolChild(s, "tok", 7896, env, []string{"opencode"})
		defer cleanup()
		raw, _ := envrewrite.Get(out, "OPENCODE_CONFIG_CONTENT")
		var cfg struct {
			Provider map[string]struct {
				Options struct{ BaseURL, APIKey string }
			}
		}
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil || cfg.Provider["anthropic"].Options.BaseURL != "http://127.0.0.1:7896/pool/p/v1" ||
			cfg.Provider["google"].Options.BaseURL != "http://127.0.0.1:7896/pool/p/v1beta" || cfg.Provider["openai"].Options.APIKey != "tok" {
			t.Fatalf("%s %v", raw, err)
		}
	})
	t.Run("POOL-20/no-agent-presets", func(t *testing.T) {
		off := &Settings{PoolName: "p"}
		out, argv, cleanup := poolChild(off, "tok", 7896, env, []string{"codex", "exec"})
		defer cleanup()
		if len(argv) != 2 {
			t.Fatalf("argv %q", argv)
		}
		if _, ok := envrewrite.Get(out, "GEMINI_CLI_SYSTEM_SETTINGS_PATH"); ok {
			t.Fatal("preset applied with presets off")
		}
	})
	t.Run("POOL-20/OPS-8/qwen-preset-selects-openai-auth-unless-chosen", func(t *testing.T) {
		home := t.TempDir()
		qenv := []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + t.TempDir()}
		_, argv, cleanup := poolChild(s, "tok", 7896, qenv, []string{"qwen", "-p", "hi"})
		defer cleanup()
		if want := []string{"qwen", "--auth-type", "openai", "-p", "hi"}; strings.Join(argv, " ") != strings.Join(want, " ") {
			t.Fatalf("fresh HOME: argv %q, want %q", argv, want)
		}
		for _, own := range [][]string{{"qwen", "--auth-type", "anthropic", "-p", "hi"}, {"qwen", "--auth-type=qwen-oauth"}} {
			if _, argv, _ := poolChild(s, "tok", 7896, qenv, own); strings.Join(argv, " ") != strings.Join(own, " ") {
				t.Fatalf("the user's --auth-type: argv %q", argv)
			}
		}
		if err := os.MkdirAll(filepath.Join(home, ".qwen"), 0o700); err != nil {
			t.Fatal(err)
		}
		for _, doc := range []string{`{"security":{"auth":{"selectedType":"qwen-oauth"}}}`, `{"selectedAuthType":"openai"}`} {
			if err := os.WriteFile(filepath.Join(home, ".qwen", "settings.json"), []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, argv, _ := poolChild(s, "tok", 7896, qenv, []string{"qwen", "-p", "hi"}); len(argv) != 3 {
				t.Fatalf("settings %s chose the auth type, argv %q", doc, argv)
			}
		}
	})
}
