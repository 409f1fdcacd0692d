//go:build agents

package main

import (
	"fmt"
	"github.com/dual-proxy/dual-proxy/internal/testbed/agentlab"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testInteractive drives Claude Code's TUI under the launcher on a PTY
// (SPEC SIG-1) in a private tmux server: the prompt appears, "say ok" is
// answered through the proxy, /exit ends it with status 0, and the pane's
// terminal settings (stty -g) are the same afterwards.
func testInteractive(t *testing.T, l *agentlab.Lab, bin, claude string) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("the interactive agents test needs tmux (.ci/run installs it)")
	}
	h := newHome(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "tmux.sock")
	var env []string
	for _, kv := range h.env() {
		env = append(env, shq(kv))
	}
	script := fmt.Sprintf(`cd %s
before=$(stty -g)
ip netns exec %s env -i TERM=xterm-256color %s %s --health-url '' --log-file %s --log-level debug --log-format json --upstream-port %s --command %s
echo "LAUNCHER-EXIT=$?"
[ "$before" = "$(stty -g)" ] && echo STTY-SAME || echo STTY-CHANGED
sleep 120
`, shq(h.cwd), l.Name, strings.Join(env, " "), shq(bin), shq(h.logFile), deadPort, shq(claude))
	if err := os.WriteFile(filepath.Join(dir, "pane.sh"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", sock, "kill-server").Run() })
	tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "120", "-y", "35", "sh "+shq(filepath.Join(dir, "pane.sh")))
	waitPane := func(what string, limit time.Duration) string {
		t.Helper()
		deadline := time.Now().Add(limit)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			screen := tmux("capture-pane", "-p", "-t", "t")
			if strings.Contains(screen, what) {
				return screen
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(h.logFile)
				t.Fatalf("no %q on the screen after %v:\n%s\nlauncher log:\n%s", what, limit, screen, log)
			}
			<-tick.C
		}
	}
	start := time.Now()
	waitPane("❯", 30*time.Second) // Claude Code's input prompt
	t.Logf("TUI prompt after %v", time.Since(start))
	// Text and Enter separately: the TUI treats one burst as a paste.
	tmux("send-keys", "-t", "t", "-l", "say ok")
	waitPane("say ok", 10*time.Second)
	tmux("send-keys", "-t", "t", "Enter")
	waitPane("● ok", 30*time.Second)
	tmux("send-keys", "-t", "t", "-l", "/exit")
	waitPane("/exit", 10*time.Second)
	tmux("send-keys", "-t", "t", "Enter")
	screen := waitPane("STTY-", 30*time.Second)
	t.Logf("interactive session done after %v", time.Since(start))
	if !strings.Contains(screen, "LAUNCHER-EXIT=0") {
		t.Fatalf("launcher did not exit 0:\n%s", screen)
	}
	if !strings.Contains(screen, "STTY-SAME") {
		t.Fatalf("terminal settings changed by the run (SIG-1):\n%s", screen)
	}
	recs := agentlab.ReadJSONL(t, h.logFile)
	if !hasRecord(recs, func(r map[string]any) bool { return r["msg"] == "child started" && r["pty"] == true }) {
		t.Fatalf("the child did not run on a PTY:\n%s", dump(recs))
	}
	// Interactive Claude Code also tries downloads.claude.ai and github.com
	// even with non-essential traffic off; inside the namespace they fail.
	if !hasRecord(recs, func(r map[string]any) bool {
		return r["msg"] == "routed" && r["host"] == "mock.test" && r["candidate"] == "direct"
	}) {
		t.Fatalf("launcher log has no `routed` record for mock.test via direct:\n%s", dump(recs))
	}
}

// shq quotes s for sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
