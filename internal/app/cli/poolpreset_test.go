package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/envrewrite"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

func TestPoolAgentPresets(t *testing.T) {
	s := &Settings{PoolName: "p", AgentPresets: true}
	env := []string{"HOME=/h", "XDG_RUNTIME_DIR=" + t.TempDir(), "GOOGLE_API_KEY=AIza-real"}
	t.Run("POOL-20/POOL-21/every-agent-variable-for-any-command", func(t *testing.T) {
		out, argv, cleanup, _ := poolChild(s, "tok", 7896, env, []string{"aider"})
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
		out, _, cleanup, _ := poolChild(odd, "tok", 7896, env, []string{"qwen"})
		defer cleanup()
		for k, want := range map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:7896/pool/50%25off%20a%23b",
			"OPENAI_BASE_URL": "http://127.0.0.1:7896/pool/50%25off%20a%23b/v1", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:7896/pool/50%25off%20a%23b"} {
			if got, _ := envrewrite.Get(out, k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
	})
	t.Run("POOL-20/gemini-preset-never-under-world-writable-tmp-without-XDG_RUNTIME_DIR", func(t *testing.T) {
		// Without XDG_RUNTIME_DIR (root shells, ssh, cron, containers) the
		// file went to /tmp/dual-proxy-gemini-…, which Gemini CLI skips
		// ("Parent directory '/tmp' is insecure"): the preset was lost
		// without a word. Now it goes to the user's state directory, and
		// where Gemini CLI would still not read it (not owned by root up
		// to /), the launcher says what to add to the user's settings.
		home, state := t.TempDir(), t.TempDir()
		genv := []string{"HOME=" + home, "XDG_STATE_HOME=" + state, "LOCALAPPDATA=" + state} // Windows: %LocalAppData%\dual-proxy\presets
		out, _, cleanup, warnings := poolChild(s, "tok", 7896, genv, []string{"/usr/bin/gemini", "-p", "hi"})
		defer cleanup()
		path, set := envrewrite.Get(out, "GEMINI_CLI_SYSTEM_SETTINGS_PATH")
		switch {
		case set && !strings.HasPrefix(path, filepath.Join(state, "dual-proxy", "presets")+string(filepath.Separator)):
			t.Fatalf("settings file %s, want it under %s", path, state)
		case set && !geminiTrusts(path):
			t.Fatalf("settings file %s named although Gemini CLI skips it", path)
		case !set && (len(warnings) != 1 || !strings.Contains(warnings[0], filepath.Join(home, ".gemini", "settings.json")) ||
			!strings.Contains(warnings[0], `"selectedType":"gemini-api-key"`)):
			t.Fatalf("no settings file and warnings %q, want one naming %s", warnings, filepath.Join(home, ".gemini", "settings.json"))
		}
		if !set {
			if left, _ := filepath.Glob(filepath.Join(state, "dual-proxy", "presets", "launch-*")); len(left) != 0 {
				t.Fatalf("unread preset left behind: %q", left)
			}
		}
	})
	t.Run("POOL-20/gemini-user-settings-selecting-api-key-auth-need-no-warning", func(t *testing.T) {
		home := t.TempDir()
		if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(geminiSettings), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, cleanup, warnings := poolChild(s, "tok", 7896, []string{"HOME=" + home, "XDG_STATE_HOME=" + t.TempDir()}, []string{"gemini"})
		defer cleanup()
		if len(warnings) != 0 {
			t.Fatalf("warnings %q", warnings)
		}
	})
	t.Run("POOL-20/opencode-preset-inline-config", func(t *testing.T) {
		out, _, cleanup, _ := poolChild(s, "tok", 7896, env, []string{"opencode"})
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
	t.Run("POOL-20/opencode-default-model-is-the-pools-first-unified-model", func(t *testing.T) {
		// Without -m OpenCode picked a model of its own catalogue
		// (gemini-3-pro-image-preview sent to an Anthropic member).
		cfg, err := config.ParseConfig([]byte("channels:\n  a: {api: anthropic, base_url: \"http://127.0.0.1:9\", api_key: sk-x}\n"+
			"pools:\n  p: {members: [a], models: [{id: fast}, {id: deep}]}\n  bare: {members: [a]}\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		withModels := &Settings{PoolName: "p", PoolAPI: "anthropic", AgentPresets: true, Pool: cfg}
		out, _, cleanup, _ := poolChild(withModels, "tok", 7896, env, []string{"opencode", "run", "say ok"})
		defer cleanup()
		raw, _ := envrewrite.Get(out, "OPENCODE_CONFIG_CONTENT")
		var doc struct {
			Model    string
			Provider map[string]struct{ Models map[string]any }
		}
		if err := json.Unmarshal([]byte(raw), &doc); err != nil || doc.Model != "anthropic/fast" {
			t.Fatalf("model %q, want anthropic/fast (%v): %s", doc.Model, err, raw)
		}
		for _, prov := range []string{"anthropic", "openai", "google"} {
			if _, ok := doc.Provider[prov].Models["deep"]; !ok {
				t.Fatalf("provider %s does not list the pool's model deep: %s", prov, raw)
			}
		}
		bare := &Settings{PoolName: "bare", PoolAPI: "anthropic", AgentPresets: true, Pool: cfg}
		out, _, cleanup2, _ := poolChild(bare, "tok", 7896, env, []string{"opencode"})
		defer cleanup2()
		raw, _ = envrewrite.Get(out, "OPENCODE_CONFIG_CONTENT")
		if strings.Contains(raw, `"model"`) {
			t.Fatalf("a pool without models got a default model: %s", raw)
		}
		for api, want := range map[string]string{"gemini": "google", "openai": "openai", "openai-chat": "openai", "mixed": "anthropic"} {
			if got := openCodeProvider(api); got != want {
				t.Errorf("openCodeProvider(%q) = %q, want %q", api, got, want)
			}
		}
	})
	t.Run("POOL-20/cline-preset-provider-settings-in-a-private-file", func(t *testing.T) {
		// Without it `dual-proxy run --pool P -- cline …` called api.cline.bot.
		cfg, err := config.ParseConfig([]byte("channels:\n  a: {api: openai-chat, base_url: \"http://127.0.0.1:9\", api_key: sk-x}\n"+
			"pools:\n  p: {members: [a], models: [{id: fast}]}\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		state := t.TempDir()
		cs := &Settings{PoolName: "p", PoolAPI: "openai-chat", AgentPresets: true, Pool: cfg}
		out, argv, cleanup, warnings := poolChild(cs, "tok", 7896, []string{"HOME=" + t.TempDir(), "XDG_STATE_HOME=" + state, "LOCALAPPDATA=" + state}, []string{"cline", "say ok"})
		path, _ := envrewrite.Get(out, "CLINE_PROVIDER_SETTINGS_PATH")
		mode, _ := envrewrite.Get(out, "CLINE_SESSION_BACKEND_MODE")
		b, err := os.ReadFile(path)
		if err != nil || len(warnings) != 0 || mode != "local" || len(argv) != 2 {
			t.Fatalf("settings %q (%v), backend mode %q, warnings %q, argv %q", path, err, mode, warnings, argv)
		}
		var doc struct {
			LastUsedProvider string
			Providers        map[string]struct {
				Settings  struct{ Provider, APIKey, Model, BaseURL string }
				UpdatedAt string
			}
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		got := doc.Providers["openai-compatible"]
		if doc.LastUsedProvider != "openai-compatible" || got.Settings.BaseURL != "http://127.0.0.1:7896/pool/p/v1" || got.Settings.APIKey != "tok" ||
			got.Settings.Model != "fast" || got.Settings.Provider != "openai-compatible" || got.UpdatedAt == "" {
			t.Fatalf("provider settings %s", b)
		}
		cleanup()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("preset file left behind: %v", err)
		}
	})
	t.Run("POOL-20/no-agent-presets", func(t *testing.T) {
		off := &Settings{PoolName: "p"}
		out, argv, cleanup, _ := poolChild(off, "tok", 7896, env, []string{"codex", "exec"})
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
		_, argv, cleanup, _ := poolChild(s, "tok", 7896, qenv, []string{"qwen", "-p", "hi"})
		defer cleanup()
		if want := []string{"qwen", "--auth-type", "openai", "-p", "hi"}; strings.Join(argv, " ") != strings.Join(want, " ") {
			t.Fatalf("fresh HOME: argv %q, want %q", argv, want)
		}
		for _, own := range [][]string{{"qwen", "--auth-type", "anthropic", "-p", "hi"}, {"qwen", "--auth-type=qwen-oauth"}} {
			if _, argv, _, _ := poolChild(s, "tok", 7896, qenv, own); strings.Join(argv, " ") != strings.Join(own, " ") {
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
			if _, argv, _, _ := poolChild(s, "tok", 7896, qenv, []string{"qwen", "-p", "hi"}); len(argv) != 3 {
				t.Fatalf("settings %s chose the auth type, argv %q", doc, argv)
			}
		}
	})
}
