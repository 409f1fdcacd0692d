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

// TestCreateConfigFromNothing: the standalone proxy with a pool token and
// no configuration file yet serves an empty pool whose editor creates the
// default file, applied at once (SPEC POOL-22).
func TestCreateConfigFromNothing(t *testing.T) {
	t.Run("POOL-22/standalone-without-config-creates-the-default-file", func(t *testing.T) {
		dir := t.TempDir()
		in := testworld.StartInstance(t, bin, append(baseEnv(dir), "XDG_CONFIG_HOME="+filepath.Join(dir, "cfg"), "APPDATA="+filepath.Join(dir, "cfg")),
			"--listen-port", "0", "--health-url", "", "--pool-token", "tok")
		addr := in.Addr
		defer http.DefaultClient.CloseIdleConnections()
		do := func(method, path, body, ifMatch string) (int, string) {
			t.Helper()
			req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer tok")
			if ifMatch != "" {
				req.Header.Set("If-Match", ifMatch)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		st, body := do("GET", "/pool/config", "", "")
		var g struct {
			Path, Version string
			Exists        bool
		}
		_ = json.Unmarshal([]byte(body), &g)
		if st != 200 || g.Exists || !strings.HasPrefix(g.Path, filepath.Join(dir, "cfg")) {
			t.Fatalf("GET: %d %s", st, body)
		}
		doc := `{"channels": {"a": {"api": "anthropic", "base_url": "http://127.0.0.1:9", "api_key": "k1"}}, "pools": {"first": {"members": ["a"]}}}`
		if st, body := do("PUT", "/pool/config", doc, `"`+g.Version+`"`); st != 200 || !strings.Contains(body, `"applied": true`) || !strings.Contains(body, `"created": true`) {
			t.Fatalf("PUT: %d %s", st, body)
		}
		if _, err := os.Stat(g.Path); err != nil {
			t.Fatal(err)
		}
		if st, body := do("GET", "/pool/status", "", ""); st != 200 || !strings.Contains(body, `"id": "first"`) {
			t.Fatalf("status: %d %s", st, body)
		}
	})
}
