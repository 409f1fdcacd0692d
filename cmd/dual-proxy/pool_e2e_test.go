package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// TestPoolLaunch runs a child in pool mode against a mock Anthropic channel
// on loopback.
func TestPoolLaunch(t *testing.T) {
	const secret = "sk-channel-secret-123"
	var sawKey, sawModel string
	channel := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawKey = r.Header.Get("X-Api-Key")
		var body struct{ Model string }
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		sawModel = body.Model
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m-real","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
	}))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	yaml := "channels:\n  mock: {api: anthropic, base_url: " + channel.URL + ", api_key_env: MOCK_KEY}\n" +
		"pools:\n  p1:\n    members: [mock]\n    models:\n      - id: unified\n        targets: {mock: m-real}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("POOL-20/run-pool-sets-base-url-and-token", func(t *testing.T) {
		out, errOut, status := launch(t, []string{"MOCK_KEY=" + secret, "ANTHROPIC_API_KEY=sk-user-own"},
			runArgs(testworld.Child(t, "pool-calls"), "--config", cfg, "--pool", "p1")...)
		if status != 0 {
			t.Fatalf("status %d stderr %q out %q", status, errOut, out)
		}
		lines := strings.Split(out, "\n")
		if len(lines) < 4 || !strings.HasPrefix(lines[0], "http://127.0.0.1:") || !strings.HasSuffix(lines[0], "/pool/p1") {
			t.Fatalf("output %q", out)
		}
		if lines[1] != "401" {
			t.Fatalf("request without the launch token got %s, want 401", lines[1])
		}
		mustContain(t, lines[2], `"text":"ok"`)
		if lines[3] != "unset" {
			t.Fatalf("ANTHROPIC_API_KEY leaked to the child: %q", lines[3])
		}
		if len(lines) < 5 || lines[4] != "unset" {
			t.Fatalf("POOL-20: the channel key variable MOCK_KEY reached the child: %q", out)
		}
		if sawKey != secret || sawModel != "m-real" {
			t.Fatalf("channel saw key %q model %q", sawKey, sawModel)
		}
		if strings.Contains(out+errOut, secret) {
			t.Fatal("channel key printed")
		}
	})
	t.Run("POOL-20/launcher-without-pool-serves-its-pools-only-with-a-token", func(t *testing.T) {
		// The config's pools are served without --pool too (the default file is read by
		// every command); an open /pool/ would let any local user spend the keys.
		out, errOut, status := launch(t, []string{"MOCK_KEY=" + secret},
			runArgs(testworld.Child(t, "pool-open"), "--config", cfg)...)
		if status != 0 {
			t.Fatalf("status %d stderr %q out %q", status, errOut, out)
		}
		if out != "401\nunset\n" {
			t.Fatalf("a pool call without a token to a launcher without --pool: %q, want 401 and no token for the child", out)
		}
	})
	t.Run("POOL-20/standalone-without-pool-token-warns-at-start", func(t *testing.T) {
		const (
			warning = "pool endpoints have no token: any local user can call the pools"
			later   = "pool endpoints have no token: pools a reload adds to the config will be callable"
		)
		empty := filepath.Join(t.TempDir(), "empty.yaml")
		if err := os.WriteFile(empty, []byte("# nothing yet\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			args        []string
			open, later bool
		}{
			{[]string{"--listen-port", "0", "--health-url", "", "--config", cfg}, true, false},
			{[]string{"--listen-port", "0", "--health-url", "", "--config", cfg, "--pool-token", "tok"}, false, false},
			// An empty config serves no pool yet: the warning says what a
			// reload would open instead.
			{[]string{"--listen-port", "0", "--health-url", "", "--config", empty}, false, true},
		} {
			_, logs, stop := startServe(t, []string{"MOCK_KEY=" + secret}, tc.args...)
			got := logs() // the warning comes before "listening", which startServe waited for
			stop()
			if strings.Contains(got, warning) != tc.open || strings.Contains(got, later) != tc.later {
				t.Fatalf("%v: open-pools warning %v (want %v), later-pools warning %v (want %v); logs:\n%s",
					tc.args, strings.Contains(got, warning), tc.open, strings.Contains(got, later), tc.later, got)
			}
		}
	})
	t.Run("POOL-15/print-config-redacts-keys", func(t *testing.T) {
		out, errOut, status := launch(t, []string{"MOCK_KEY=" + secret}, "--print-config", "--config", cfg)
		if status != 0 {
			t.Fatalf("status %d %q", status, errOut)
		}
		mustContain(t, out, "p1")
		if strings.Contains(out, secret) {
			t.Fatal("key printed")
		}
	})
	t.Run("POOL-3/bad-config-exit-2-names-path", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.yaml")
		os.WriteFile(bad, []byte("channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:1, api_key: k}\npools:\n  p: {members: [a, nope]}\n"), 0o600)
		_, errOut, status := launch(t, nil, "--print-config", "--config", bad)
		if status != 2 || !strings.Contains(errOut, "pools.p.members[1]") {
			t.Fatalf("status %d stderr %q", status, errOut)
		}
	})
	t.Run("POOL-22/launcher-pool-mode-edits-the-file-it-read", func(t *testing.T) {
		edit := `{"channels": {"mock": {"api": "anthropic", "base_url": "` + channel.URL + `", "api_key_env": "MOCK_KEY"}}, "pools": {"p1": {"members": ["mock"], "models": [{"id": "unified", "targets": {"mock": "m-real"}}]}, "p2": {"members": ["mock"]}}}`
		out, errOut, status := launch(t, []string{"MOCK_KEY=" + secret, "EDIT=" + edit},
			runArgs(testworld.Child(t, "pool-edit"), "--config", cfg, "--pool", "p1")...)
		if status != 0 || out != "401\n200\n200\n" {
			t.Fatalf("status %d stderr %q out %q (want: 401 without the token, the save, the new pool served)", status, errOut, out)
		}
		saved, _ := os.ReadFile(cfg)
		if !strings.Contains(string(saved), "p2:") || !strings.Contains(string(saved), "api_key_env: MOCK_KEY") {
			t.Fatalf("saved file:\n%s", saved)
		}
	})
}
