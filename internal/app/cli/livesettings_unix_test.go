//go:build unix

package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// startServe runs the standalone proxy (`dual-proxy --listen-port 0
// ARGS`) as its own process (the test binary standing in, see TestMain);
// it is stopped with SIGTERM at the end of the test.
func startServe(t *testing.T, env []string, args ...string) *os.Process {
	t.Helper()
	self := testworld.Child(t, "exit", "0")[0]
	cmd := exec.Command(self, append([]string{"--listen-port", "0", "--health-url", ""}, args...)...)
	cmd.Env = append([]string{"DUAL_PROXY_TEST_MAIN=dual-proxy"}, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("dual-proxy did not stop on SIGTERM; stderr:\n%s", stderr.String())
		}
		if t.Failed() {
			t.Logf("dual-proxy's stderr:\n%s", stderr.String())
		}
	})
	return cmd.Process
}

// pollSettings reads the settings until ok accepts them, or fails after
// 15 s.
func pollSettings(t *testing.T, cl *settings.Client, what string, ok func(settings.Document) bool) settings.Document {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		doc, err := cl.Get(context.Background())
		if err == nil && ok(doc) {
			return doc
		}
		if time.Now().After(deadline) {
			t.Fatalf("the settings never showed %s: %+v %v", what, doc.Settings, err)
		}
		time.Sleep(20 * time.Millisecond) // polling another process, not synchronisation
	}
}

func TestLiveSettingsOfTheConfigFile(t *testing.T) {
	env := liveEnv(t)
	gw := testworld.NewGateway(t)
	cfg := filepath.Join(t.TempDir(), "dual-proxy.yaml")
	const start = "# the proxy settings of this machine\nproxy:\n  cooldown-ms: 5000 # short: the gateways here restart often\n"
	if err := os.WriteFile(cfg, []byte(start), 0o644); err != nil {
		t.Fatal(err)
	}
	proc := startServe(t, env, "--config", cfg)
	e, token := registeredInstance(t, env)
	cl := &settings.Client{Addr: e.Addr, Token: token}
	doc := pollSettings(t, cl, "the file's cooldown", func(d settings.Document) bool { return d.Settings[settings.CooldownMS] == float64(5000) })
	if doc.Sources[settings.CooldownMS] != settings.SourceFile || !doc.WriteBack {
		t.Fatalf("cooldown-ms from %q, write-back %v", doc.Sources[settings.CooldownMS], doc.WriteBack)
	}

	t.Run("OPS-7/file-written-back-keeping-comments-and-0600", func(t *testing.T) {
		doc, err := cl.Set(context.Background(), map[string]any{settings.Gateway: []string{"http://u:pw@" + gw.Addr}})
		if err != nil {
			t.Fatal(err)
		}
		if doc.Saved == nil || doc.Saved.Error != "" {
			t.Fatalf("not written back: %+v", doc.Saved)
		}
		data, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"# the proxy settings of this machine\n", "cooldown-ms: 5000 # short: the gateways here restart often\n", "http://u:pw@" + gw.Addr} {
			if !strings.Contains(string(data), want) {
				t.Fatalf("no %q in the written file:\n%s", want, data)
			}
		}
		if fi, _ := os.Stat(cfg); fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v after writing a password, want 0600", fi.Mode().Perm())
		}
		if g := settings.Text(doc.Settings[settings.Gateway]); strings.Contains(g, "pw") {
			t.Fatalf("the document shows the gateway's password: %s", g)
		}
	})
	t.Run("OPS-7/set-to-the-value-in-effect-says-no-change-not-no-config-file", func(t *testing.T) {
		args := []string{"settings", "set", "--addr", e.Addr, "race-delay-ms=260"}
		if out, errOut, st := runCmdEnv(t, DualProxy, env, args...); st != 0 || !strings.Contains(out, "applied and written to "+cfg) {
			t.Fatalf("first set: %d %q %q", st, out, errOut)
		}
		out, errOut, st := runCmdEnv(t, DualProxy, env, args...)
		if st != 0 || !strings.Contains(out, "no change: already in effect ("+cfg+" left as it is)") || strings.Contains(out, "start with --config") {
			t.Fatalf("the same set again: %d %q %q", st, out, errOut)
		}
	})
	t.Run("OPS-7/sighup-applies-an-edited-file", func(t *testing.T) {
		data, _ := os.ReadFile(cfg)
		edited := strings.Replace(string(data), "cooldown-ms: 5000", "cooldown-ms: 7777", 1)
		if err := os.WriteFile(cfg, []byte(edited), 0o600); err != nil {
			t.Fatal(err)
		}
		proc.Signal(syscall.SIGHUP)
		pollSettings(t, cl, "cooldown-ms 7777 from the file", func(d settings.Document) bool {
			return d.Settings[settings.CooldownMS] == float64(7777) && d.Sources[settings.CooldownMS] == settings.SourceFile
		})
	})
	t.Run("OPS-7/sighup-with-a-bad-file-keeps-the-settings-errors-at-file-line-col", func(t *testing.T) {
		if err := os.WriteFile(cfg, []byte("proxy:\n  cooldown-ms: -3\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		proc.Signal(syscall.SIGHUP)
		doc := pollSettings(t, cl, "the file's error", func(d settings.Document) bool { return len(d.FileErrors) > 0 })
		if !strings.Contains(doc.FileErrors[0], cfg+":2:") || !strings.Contains(doc.FileErrors[0], "cooldown-ms") {
			t.Fatalf("file error %q, want it at %s:2:COL naming cooldown-ms", doc.FileErrors[0], cfg)
		}
		if doc.Settings[settings.CooldownMS] != float64(7777) {
			t.Fatalf("a bad file changed cooldown-ms to %v", doc.Settings[settings.CooldownMS])
		}
		// `settings get` says it too, by its exit status: what runs is
		// not what the file says.
		out, errOut, st := runCmdEnv(t, DualProxy, env, "settings", "get", "cooldown-ms")
		if st != exitFileRefused || out != "7777\n" || !strings.Contains(errOut, "was not reloaded") || !strings.Contains(errOut, cfg+":2:") {
			t.Fatalf("settings get of a refused file: exit %d, out %q, err %q", st, out, errOut)
		}
	})
}
