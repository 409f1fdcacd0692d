package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testworld"
)

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
