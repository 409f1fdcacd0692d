//go:build unix

package main

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/pool/status"
)

// TestPoolReload: the standalone proxy re-reads its pool configuration on
// SIGHUP; a broken file keeps the running configuration (SPEC POOL-16).
// Unix only: Windows has no SIGHUP (there the editor's save applies a change,
// TestCreateConfigFromNothing).
func TestPoolReload(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	// write, pools and waitPools take the calling (sub)test's t, so a
	// failure is reported under that subtest's name: the parent's t.Fatal
	// called from a subtest's goroutine is misattributed and aborts the
	// subtest as a "FailNow on a parent test" panic.
	write := func(t *testing.T, s string) {
		t.Helper()
		if err := os.WriteFile(cfg+".tmp", []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(cfg+".tmp", cfg); err != nil {
			t.Fatal(err)
		}
	}
	write(t, "channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:9, api_key: k1}\npools:\n  p1: {members: [a]}\n")

	in := testworld.StartInstance(t, bin, baseEnv(dir), "--listen-port", "0", "--health-url", "", "--config", cfg, "--pool-token", "edit-tok")
	addr, logText := in.Addr, in.Stderr
	pools := func(t *testing.T) []string {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/pool/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st status.StatusJSON
		json.NewDecoder(resp.Body).Decode(&st)
		var ids []string
		for _, p := range st.Pools {
			ids = append(ids, p.ID)
		}
		return ids
	}
	waitPools := func(t *testing.T, want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for strings.Join(pools(t), ",") != want {
			if time.Now().After(deadline) {
				t.Fatalf("pools %v, want %s", pools(t), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	defer http.DefaultClient.CloseIdleConnections()

	t.Run("POOL-16/sighup-reloads-config", func(t *testing.T) {
		waitPools(t, "p1")
		write(t, "channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:9, api_key: k1}\n  b: {api: anthropic, base_url: http://127.0.0.1:9, api_key: k2}\npools:\n  p1: {members: [a, b]}\n  p2: {members: [b]}\n")
		in.Signal(syscall.SIGHUP)
		waitPools(t, "p1,p2")
	})
	// The registry entry follows the reload: `pool test` of the pool just
	// added finds this instance without --addr (the entry's pool list was
	// the one at start).
	t.Run("OPS-6/pool-added-by-sighup-found-by-pool-test", func(t *testing.T) {
		c := exec.Command(bin, "pool", "test", "p2", "--json")
		c.Env = baseEnv(dir)
		out, err := c.CombinedOutput()
		var doc struct{ Pool, Instance string }
		if err != nil || json.Unmarshal(out, &doc) != nil || doc.Pool != "p2" || doc.Instance != addr {
			t.Fatalf("pool test p2: %v\n%s", err, out)
		}
	})
	t.Run("POOL-16/broken-config-keeps-running-one", func(t *testing.T) {
		write(t, "pools: [this is not a pool map\n")
		in.Signal(syscall.SIGHUP)
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(logText(), "not reloaded") {
			if time.Now().After(deadline) {
				t.Fatal("no 'not reloaded' log line")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := strings.Join(pools(t), ","); got != "p1,p2" {
			t.Fatalf("pools %s after a broken reload", got)
		}
		// The good SIGHUP before this one is logged once (it was twice:
		// the pool's line and the command line's), with its file.
		n := 0
		for _, l := range strings.Split(logText(), "\n") {
			if strings.Contains(l, "reloaded") && !strings.Contains(l, "not reloaded") {
				n++
				if !strings.Contains(l, "config=") || !strings.Contains(l, "pools=2") {
					t.Errorf("reload line lacks the file or the counts: %s", l)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d reload lines for one good SIGHUP, want 1:\n%s", n, logText())
		}
	})
	t.Run("POOL-16/duplicate-key-on-reload-names-file-line-column", func(t *testing.T) {
		write(t, "channels:\n  a: {api: anthropic, base_url: http://127.0.0.1:9, api_key: k1}\n  a: {api: anthropic, base_url: http://127.0.0.1:9, api_key: k2}\npools:\n  p1: {members: [a]}\n")
		in.Signal(syscall.SIGHUP)
		want := cfg + ":3:3: channels.a: duplicate key (first at line 2)"
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(logText(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", want, logText())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if got := strings.Join(pools(t), ","); got != "p1,p2" {
			t.Fatalf("pools %s after a refused reload", got)
		}
	})
	status := func(t *testing.T) string {
		t.Helper()
		c := exec.Command(bin, "status", "--addr", addr)
		c.Env = baseEnv(dir)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("status: %v\n%s", err, out)
		}
		return string(out)
	}
	t.Run("POOL-16/status-shows-the-failed-reload", func(t *testing.T) {
		// The broken file of the subtest before: the user who sent SIGHUP
		// learns it from `dual-proxy status`, not only from the log.
		out := status(t)
		want := "pool config: NOT RELOADED at "
		if !strings.Contains(out, want) || !strings.Contains(out, cfg+":3:3: channels.a: duplicate key (first at line 2)") ||
			!strings.Contains(out, "still serving the configuration loaded at ") {
			t.Fatalf("status does not show the failed reload:\n%s", out)
		}
	})
	page := func(t *testing.T) string {
		t.Helper()
		resp, err := http.Get("http://" + addr + "/pool/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET /pool/: %d", resp.StatusCode)
		}
		return string(body)
	}
	t.Run("POOL-16/pool-page-shows-the-failed-reload", func(t *testing.T) {
		// The page as fetched (no script run: the browser suite checks its
		// rendering) carries the failure, every error and that the old
		// configuration still serves (closing note's open item).
		body := page(t)
		if !strings.Contains(body, `<div id="reload" class="verdict" data-level="down" data-failed="true"><div>Configuration NOT reloaded at `) ||
			!strings.Contains(body, "still serves until "+html.EscapeString(cfg)+" reads without errors") ||
			!strings.Contains(body, "<li><code>"+html.EscapeString(cfg+":3:3: channels.a: duplicate key (first at line 2)")+"</code></li>") {
			t.Fatalf("the page does not show the failed reload:\n%s", body)
		}
		if strings.Contains(body, "k1") || strings.Contains(body, "k2") {
			t.Fatal("a key on the page")
		}
	})
	t.Run("POOL-22/editor-save-applies-like-sighup", func(t *testing.T) {
		write(t, "# kept comment\nchannels:\n  a: {api: anthropic, base_url: http://127.0.0.1:9, api_key: k1}\npools:\n  p1: {members: [a]}\n")
		get, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/pool/config", nil)
		get.Header.Set("Authorization", "Bearer edit-tok")
		resp, err := http.DefaultClient.Do(get)
		if err != nil {
			t.Fatal(err)
		}
		etag := resp.Header.Get("ETag")
		resp.Body.Close()
		doc := `{"channels": {"a": {"api": "anthropic", "base_url": "http://127.0.0.1:9", "api_key": "***"}}, "pools": {"p1": {"members": ["a"]}, "p3": {"members": ["a"]}}}`
		req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/pool/config", strings.NewReader(doc))
		req.Header.Set("If-Match", etag)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("PUT without the token: %d", resp.StatusCode)
		}
		req, _ = http.NewRequest(http.MethodPut, "http://"+addr+"/pool/config", strings.NewReader(doc))
		req.Header.Set("If-Match", etag)
		req.Header.Set("Authorization", "Bearer edit-tok")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"applied": true`) || strings.Contains(string(body), "k1") {
			t.Fatalf("PUT: %d %s", resp.StatusCode, body)
		}
		waitPools(t, "p1,p3") // applied at once, no SIGHUP
		saved, _ := os.ReadFile(cfg)
		if !strings.Contains(string(saved), "# kept comment") || !strings.Contains(string(saved), "api_key: k1") {
			t.Fatalf("saved file:\n%s", saved)
		}
		if out := status(t); strings.Contains(out, "NOT RELOADED") {
			t.Fatalf("a good reload leaves the failure shown:\n%s", out)
		}
		if body := page(t); strings.Contains(body, `data-failed="true"`) || !strings.Contains(body, `<div id="reload" class="verdict" data-level="down" hidden></div>`) {
			t.Fatalf("a good reload leaves the failure on the page:\n%s", body)
		}
	})
}
