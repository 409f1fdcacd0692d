package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// TestAgentOverrideWarning runs the launcher with a temporary HOME holding a
// Claude Code settings file that sets https_proxy (the spelling Claude
// Code reads first), and a project settings file in the working
// directory: one warning per file and key, naming both and what to do
// (SPEC OPS-8).
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
	write(filepath.Join(home, ".claude", "settings.json"), `{"env":{"https_proxy":"http://127.0.0.1:7000","DISABLE_TELEMETRY":"1"}}`)
	project := t.TempDir()
	write(filepath.Join(project, ".claude", "settings.local.json"), `{"env":{"NODE_USE_ENV_PROXY":"0"}}`)
	t.Chdir(project)
	// The "claude" child, found on PATH, is a copy of the test binary that exits at once.
	bin := t.TempDir()
	claude := testworld.ChildAs(t, bin, "claude", "exit", "0")
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	t.Setenv("PATH", path)
	stateDir := t.TempDir()
	env := []string{"HOME=" + home, "PATH=" + path, "XDG_STATE_HOME=" + stateDir, "XDG_RUNTIME_DIR=" + t.TempDir(), "LOCALAPPDATA=" + stateDir, "DISABLE_TELEMETRY=1"}
	t.Run("OPS-8/claude-settings-pinned-by-the-launcher-no-warning-files-untouched", func(t *testing.T) {
		// Claude Code's --settings layer sits above the user's and the
		// project's settings: the launcher passes the environment it set
		// through it instead of warning about the files below.
		before, _ := os.ReadFile(filepath.Join(home, ".claude", "settings.json"))
		shown := testworld.ChildAs(t, t.TempDir(), "claude", "claude-settings")
		out, errOut, status := runCmdEnv(t, Claude, env, append([]string{"--listen-port", "0", "--health-url", "", "--"}, shown[1:]...)...)
		if status != 0 || errOut != "" {
			t.Fatalf("status %d stderr %q", status, errOut)
		}
		var doc struct{ Env map[string]string }
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("the child got no --settings file with the launcher's env: %q (%v)", out, err)
		}
		// On Windows the variables are one per name whatever the case, so
		// the launcher writes one spelling (PLAT-1).
		p := doc.Env["HTTPS_PROXY"]
		if !strings.HasPrefix(p, "http://127.0.0.1:") || (runtime.GOOS != "windows" && doc.Env["https_proxy"] != p) || doc.Env["NODE_USE_ENV_PROXY"] != "1" {
			t.Fatalf("pinned env %v", doc.Env)
		}
		if _, ok := doc.Env["DISABLE_TELEMETRY"]; ok {
			t.Fatalf("a variable the launcher did not set was pinned: %v", doc.Env)
		}
		after, _ := os.ReadFile(filepath.Join(home, ".claude", "settings.json"))
		if string(after) != string(before) {
			t.Fatalf("the user's settings changed: %s", after)
		}
		if left, _ := filepath.Glob(filepath.Join(stateDir, "dual-proxy", "presets", "launch-*")); len(left) != 0 {
			t.Fatalf("the --settings file outlived the launch: %q", left)
		}
	})
	t.Run("OPS-8/user-own-settings-flag-not-pinned-files-warned", func(t *testing.T) {
		own := append(append([]string{}, claude[1:]...), "--settings", "x")
		_, errOut, _ := runCmdEnv(t, Claude, env, append([]string{"--listen-port", "0", "--health-url", "", "--"}, own...)...)
		if !strings.Contains(errOut, "sets env.https_proxy") {
			t.Fatalf("with the user's own --settings the files are checked: %q", errOut)
		}
	})
	t.Run("OPS-8/warns-once-naming-file-key-and-fix", func(t *testing.T) {
		_, errOut, status := runCmdEnv(t, Claude, env, append([]string{"--listen-port", "0", "--health-url", "", "--no-agent-presets", "--"}, claude[1:]...)...)
		if status != 0 {
			t.Fatalf("status %d %q", status, errOut)
		}
		want := "claude-dual-proxy: warning: " + filepath.Join("~", ".claude", "settings.json") + " sets env.https_proxy, which Claude Code applies over the launcher's value: claude will not use dual-proxy as launched (remove the key)\n" +
			"claude-dual-proxy: warning: " + filepath.Join(project, ".claude", "settings.local.json") + " sets env.NODE_USE_ENV_PROXY, which Claude Code applies over the launcher's value: claude will not use dual-proxy as launched (remove the key)\n"
		if errOut != want {
			t.Fatalf("stderr\n%s\nwant\n%s", errOut, want)
		}
	})
	// claude-dual-proxy runs Claude Code whatever --command is called (a
	// wrapper script): its settings files are checked all the same.
	t.Run("OPS-8/claude-settings-checked-whatever-the-command-is-called", func(t *testing.T) {
		// claude itself is pinned (--settings) unless --no-agent-presets; a
		// wrapper of another name is not, so it gets the warnings.
		_, claudeWarnings, _ := runCmdEnv(t, Claude, env, append([]string{"--listen-port", "0", "--health-url", "", "--no-agent-presets", "--"}, claude[1:]...)...)
		if !strings.Contains(claudeWarnings, "warning: ") {
			t.Fatalf("claude got no warning to compare with: %q", claudeWarnings)
		}
		wrapper := testworld.ChildAs(t, t.TempDir(), "my-claude-wrapper", "exit", "0")
		_, errOut, status := runCmdEnv(t, Claude, env, append([]string{"--listen-port", "0", "--health-url", "", "--command", wrapper[0], "--"}, wrapper[1:]...)...)
		if status != 0 || errOut != claudeWarnings {
			t.Fatalf("--command %s: status %d stderr\n%s\nwant the warnings claude gets\n%s", wrapper[0], status, errOut, claudeWarnings)
		}
	})
	t.Run("OPS-8/failed-child-after-a-warning-points-at-the-file-not-the-log", func(t *testing.T) {
		failing := testworld.ChildAs(t, t.TempDir(), "claude", "exit", "3")
		_, errOut, status := runCmdEnv(t, Claude, env, append([]string{"--listen-port", "0", "--health-url", "", "--no-agent-presets", "--"}, failing[1:]...)...)
		end := "claude-dual-proxy: the command failed after the warning(s) at start: its own settings send it past dual-proxy; fix the file(s) named there first\n"
		if status != 3 || !strings.HasSuffix(errOut, end) || strings.Contains(errOut, "see the log") {
			t.Fatalf("status %d stderr\n%s\nwant it to end with\n%s", status, errOut, end)
		}
	})
	t.Run("ENV-1/no-warning-for-other-commands", func(t *testing.T) {
		_, errOut, status := runCmdEnv(t, DualProxy, env, append([]string{"run", "--listen-port", "0", "--health-url", "", "--"}, testworld.Child(t, "exit", "0")...)...)
		if status != 0 || errOut != "" {
			t.Fatalf("status %d %q", status, errOut)
		}
	})
}

// TestAgentExitHint runs the launcher with a "gemini" child that exits 55,
// Gemini CLI's status outside a trusted folder: the launcher's last line
// names the fixes, and the child got nothing that trusts the folder
// (SPEC OPS-8).
func TestAgentExitHint(t *testing.T) {
	bin := t.TempDir()
	env := []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "XDG_STATE_HOME=" + t.TempDir(), "LOCALAPPDATA=" + t.TempDir()}
	t.Run("OPS-8/gemini-exit-55-names-the-trust-fixes", func(t *testing.T) {
		gemini := testworld.ChildAs(t, bin, "gemini", "exit", "55")
		_, errOut, status := runCmdEnv(t, DualProxy, env, append([]string{"run", "--listen-port", "0", "--health-url", "", "--"}, gemini...)...)
		want := "dual-proxy: gemini exited 55: Gemini CLI runs only in a trusted folder; pass --skip-trust, set GEMINI_CLI_TRUST_WORKSPACE=true, " +
			"or trust this folder in gemini's interactive mode (the launcher trusts nothing for you)\n"
		if status != 55 || !strings.HasSuffix(errOut, want) {
			t.Fatalf("status %d stderr\n%s\nwant it to end with\n%s", status, errOut, want)
		}
	})
	t.Run("OPS-8/other-command-exit-55-no-trust-hint", func(t *testing.T) {
		other := testworld.ChildAs(t, bin, "aider", "exit", "55")
		_, errOut, status := runCmdEnv(t, DualProxy, env, append([]string{"run", "--listen-port", "0", "--health-url", "", "--"}, other...)...)
		if status != 55 || strings.Contains(errOut, "trusted") {
			t.Fatalf("status %d stderr %q", status, errOut)
		}
	})
}

// runCmdEnv is runCmd with env as the whole environment (no HOME added),
// but for the registry's directory (XDG_RUNTIME_DIR, %LocalAppData%), which
// is the test's own unless env sets it: a launcher under test never
// registers among the user's running instances.
func runCmdEnv(t *testing.T, f func([]string, IO) int, env []string, args ...string) (string, string, int) {
	t.Helper()
	dir := t.TempDir()
	env = ownRegistry(env, dir)
	out, _ := os.Create(filepath.Join(dir, "out"))
	errf, _ := os.Create(filepath.Join(dir, "err"))
	defer out.Close()
	defer errf.Close()
	status := f(args, IO{Stdout: out, Stderr: errf, Environ: env})
	o, _ := os.ReadFile(out.Name())
	e, _ := os.ReadFile(errf.Name())
	return string(o), string(e), status
}
