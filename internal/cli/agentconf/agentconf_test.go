package agentconf

import (
	"reflect"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAgentOverrides(t *testing.T) {
	launcherSet := map[string]bool{"HTTPS_PROXY": true, "https_proxy": true, "NO_PROXY": true, "ANTHROPIC_BASE_URL": true}
	t.Run("ENV-1/claude-settings-env-keys-that-undo-the-launcher", func(t *testing.T) {
		got := claudeOverrides([]byte(`{"env":{"HTTPS_PROXY":"http://127.0.0.1:7000","API_TIMEOUT_MS":"1","NO_PROXY":"x"},"model":"opus"}`), launcherSet)
		if want := []string{"env.HTTPS_PROXY", "env.NO_PROXY"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v want %v", got, want)
		}
	})
	t.Run("ENV-1/claude-settings-not-json-or-no-env", func(t *testing.T) {
		for _, doc := range []string{`{`, `{"model":"x"}`, ``, `[1]`} {
			if got := claudeOverrides([]byte(doc), launcherSet); len(got) != 0 {
				t.Fatalf("%q: %v", doc, got)
			}
		}
	})
	t.Run("POOL-20/codex-model-provider-only-without-presets", func(t *testing.T) {
		doc := []byte("model = \"o3\"\nmodel_provider = \"corp\"\n[model_providers.corp]\nbase_url = \"http://127.0.0.1:9/v1\"\n")
		if got := codexOverrides(doc, true); !reflect.DeepEqual(got, []string{"model_provider"}) {
			t.Fatalf("got %v", got)
		}
		if got := codexOverrides(doc, false); len(got) != 0 {
			t.Fatalf("with presets the -c overrides win, got %v", got)
		}
		if got := codexOverrides([]byte("model = \"o3\"\n"), true); len(got) != 0 {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("ENV-1/claude-managed-settings-per-os", func(t *testing.T) {
		for goos, want := range map[string]string{"linux": "/etc/claude-code/managed-settings.json",
			"darwin": "/Library/Application Support/ClaudeCode/managed-settings.json", "windows": `C:\ProgramData\ClaudeCode\managed-settings.json`} {
			if got := claudeManagedSettings(goos); got != want {
				t.Errorf("%s: %q want %q", goos, got, want)
			}
		}
	})
	t.Run("ENV-1/agent-from-argv0", func(t *testing.T) {
		for argv0, want := range map[string]string{"claude": "claude", "/opt/bin/codex": "codex", "gemini.exe": "gemini", "Claude": "claude", "curl": ""} {
			if got := agentName(argv0); got != want {
				t.Errorf("%q: %q want %q", argv0, got, want)
			}
		}
	})
}
