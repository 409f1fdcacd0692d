package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/pool/status"
)

// TestTwoInstancesOnOneFile: two instances started with the same --config
// follow the file (SPEC OPS-7): a settings change written back by one,
// and a save in the other's pool editor, reach the other within a few
// seconds of the file watch, on every OS (Windows has no SIGHUP), and the
// instance that reloaded logs what changed.
func TestTwoInstancesOnOneFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	const start = "# shared by two instances\nchannels:\n  a: {api: anthropic, base_url: http://127.0.0.1:9, api_key_env: A_KEY}\npools:\n  p1: {members: [a]}\nproxy:\n  cooldown-ms: 5000\n"
	if err := os.WriteFile(cfg, []byte(start), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(baseEnv(dir), "A_KEY=key-a")
	args := []string{"--listen-port", "0", "--health-url", "", "--config", cfg, "--pool-token", "pool-tok", "--control-token", "control-tok"}
	one := testworld.StartInstance(t, bin, env, args...)
	two := testworld.StartInstance(t, bin, env, args...)
	defer http.DefaultClient.CloseIdleConnections()
	const bound = 15 * time.Second // the watch looks every 2 s

	t.Run("OPS-7/settings-change-on-one-reaches-the-other", func(t *testing.T) {
		if _, err := (&settings.Client{Addr: one.Addr, Token: "control-tok"}).Set(context.Background(), map[string]any{settings.CooldownMS: 4242}); err != nil {
			t.Fatal(err)
		}
		saved := time.Now()
		other := &settings.Client{Addr: two.Addr, Token: "control-tok"}
		waitFor(t, bound, "the other instance to run cooldown-ms 4242", func() bool {
			doc, err := other.Get(context.Background())
			return err == nil && doc.Settings[settings.CooldownMS] == float64(4242) && doc.Sources[settings.CooldownMS] == settings.SourceFile
		})
		t.Logf("converged %v after the save", time.Since(saved).Round(10*time.Millisecond))
		if log := two.Stderr(); !strings.Contains(log, `by="file watch"`) || !strings.Contains(log, "changed=\"proxy: cooldown-ms\"") {
			t.Fatalf("the other instance's log does not say what changed:\n%s", log)
		}
	})
	t.Run("OPS-7/editor-save-on-one-reaches-the-other", func(t *testing.T) {
		get, _ := http.NewRequest(http.MethodGet, "http://"+two.Addr+"/pool/config", nil)
		get.Header.Set("Authorization", "Bearer pool-tok")
		resp, err := http.DefaultClient.Do(get)
		if err != nil {
			t.Fatal(err)
		}
		etag := resp.Header.Get("ETag")
		resp.Body.Close()
		doc := `{"channels": {"a": {"api": "anthropic", "base_url": "http://127.0.0.1:9", "api_key_env": "A_KEY"}}, "pools": {"p1": {"members": ["a"]}, "p2": {"members": ["a"]}}, "proxy": {"cooldown-ms": 4242}}`
		req, _ := http.NewRequest(http.MethodPut, "http://"+two.Addr+"/pool/config", strings.NewReader(doc))
		req.Header.Set("If-Match", etag)
		req.Header.Set("Authorization", "Bearer pool-tok")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"applied": true`) {
			t.Fatalf("save: %d %s", resp.StatusCode, body)
		}
		waitFor(t, bound, "the first instance to serve p2", func() bool { return poolIDs(t, one.Addr) == "p1,p2" })
		if log := one.Stderr(); !strings.Contains(log, "pools: +p2") {
			t.Fatalf("the first instance's log does not say what changed:\n%s", log)
		}
	})
	t.Run("OPS-7/bad-save-in-a-text-editor-is-refused-by-both", func(t *testing.T) {
		bad := strings.Replace(start, "cooldown-ms: 5000", "cooldwn-ms: 1", 1)
		if err := os.WriteFile(cfg, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, in := range []*testworld.Instance{one, two} {
			cl := &settings.Client{Addr: in.Addr, Token: "control-tok"}
			waitFor(t, bound, "the refusal in the settings of "+in.Addr, func() bool {
				doc, err := cl.Get(context.Background())
				return err == nil && len(doc.FileErrors) > 0
			})
			if ids := poolIDs(t, in.Addr); ids != "p1,p2" {
				t.Fatalf("%s: a refused file changed the pools to %q", in.Addr, ids)
			}
		}
	})
}

// poolIDs are the pools an instance serves, comma-separated.
func poolIDs(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/pool/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st status.StatusJSON
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range st.Pools {
		ids = append(ids, p.ID)
	}
	return strings.Join(ids, ",")
}

// waitFor is testkit.WaitFor for a condition that asks an instance over
// HTTP: it is asked at most every 50 ms.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	var last time.Time
	testkit.WaitFor(t, d, what, func() bool {
		if time.Since(last) < 50*time.Millisecond {
			return false
		}
		last = time.Now()
		return cond()
	})
}
