package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testworld"
)

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

// TestAgentOverrideWarning runs the launcher with a temporary HOME holding a
// Claude Code settings file that sets HTTPS_PROXY, and a project settings
// file in the working directory: one warning per file and key, naming both.
func TestAgentOverrideWarning(t *testing.T) {
	home := t.TempDir()
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".claude", "settings.json"), `{"env":{"HTTPS_PROXY":"http://127.0.0.1:7000","DISABLE_TELEMETRY":"1"}}`)
	project := t.TempDir()
	write(filepath.Join(project, ".claude", "settings.local.json"), `{"env":{"NODE_USE_ENV_PROXY":"0"}}`)
	t.Chdir(project)
	// The "claude" child, found on PATH, is a copy of the test binary that exits at once.
	bin := t.TempDir()
	claude := testworld.ChildAs(t, bin, "claude", "exit", "0")
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	t.Setenv("PATH", path)
	env := []string{"HOME=" + home, "PATH=" + path, "XDG_STATE_HOME=" + t.TempDir(), "LOCALAPPDATA=" + t.TempDir()}
	t.Run("ENV-1/warns-once-naming-file-and-key", func(t *testing.T) {
		_, errOut, status := runCmdEnv(t, Claude, env, append([]string{"--listen-port", "0", "--health-url", "", "--"}, claude[1:]...)...)
		if status != 0 {
			t.Fatalf("status %d %q", status, errOut)
		}
		want := "claude-dual-proxy: warning: " + filepath.Join("~", ".claude", "settings.json") + " sets env.HTTPS_PROXY, which replaces the value the launcher set: claude will not use dual-proxy as launched\n" +
			"claude-dual-proxy: warning: " + filepath.Join(project, ".claude", "settings.local.json") + " sets env.NODE_USE_ENV_PROXY, which replaces the value the launcher set: claude will not use dual-proxy as launched\n"
		if errOut != want {
			t.Fatalf("stderr\n%s\nwant\n%s", errOut, want)
		}
	})
	t.Run("ENV-1/no-warning-for-other-commands", func(t *testing.T) {
		_, errOut, status := runCmdEnv(t, DualProxy, env, append([]string{"run", "--listen-port", "0", "--health-url", "", "--"}, testworld.Child(t, "exit", "0")...)...)
		if status != 0 || errOut != "" {
			t.Fatalf("status %d %q", status, errOut)
		}
	})
}

// runCmdEnv is runCmd with env as the whole environment (no HOME added).
func runCmdEnv(t *testing.T, f func([]string, IO) int, env []string, args ...string) (string, string, int) {
	t.Helper()
	dir := t.TempDir()
	out, _ := os.Create(filepath.Join(dir, "out"))
	errf, _ := os.Create(filepath.Join(dir, "err"))
	defer out.Close()
	defer errf.Close()
	status := f(args, IO{Stdout: out, Stderr: errf, Environ: env})
	o, _ := os.ReadFile(out.Name())
	e, _ := os.ReadFile(errf.Name())
	return string(o), string(e), status
}
