package settings_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// TestPortRangeInURLs: a port outside 1-65535 in a setting that takes a
// URL with a port (health-url, upstream-url, a gateway) is refused by a
// change and by the file, naming the key and the range (SPEC OPS-7).
func TestPortRangeInURLs(t *testing.T) {
	for _, tc := range []struct{ name, body, field string }{
		{"OPS-7/health-url-port-99999-refused", `{"health-url": "http://127.0.0.1:99999/"}`, "health-url"},
		{"OPS-7/health-url-port-0-refused", `{"health-url": "https://api.example:0/"}`, "health-url"},
		{"OPS-7/upstream-url-port-99999-refused", `{"upstream-url": "http://127.0.0.1:99999"}`, "upstream-url"},
		{"OPS-7/gateway-port-99999-refused", `{"gateway": ["127.0.0.1:99999"]}`, "gateway[0]"},
		{"OPS-7/upstream-port-99999-refused", `{"upstream-port": 99999}`, "upstream-port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := newInstance(t, settings.Options{})
			v := in.version(t)
			code, doc := in.put(t, tc.body, v)
			if got := strings.Join(fields(t, doc), " "); code != 400 || got != tc.field {
				t.Fatalf("PUT %d fields %q, want 400 %q (%v)", code, got, tc.field, doc)
			}
			if msg := doc["errors"].([]any)[0].(map[string]any)["message"].(string); !strings.Contains(msg, "1-65535") {
				t.Fatalf("message %q names no range", msg)
			}
			if in.version(t) != v {
				t.Fatal("a refused change applied something")
			}
		})
	}
	t.Run("OPS-7/health-url-port-99999-refused-in-the-file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte("proxy:\n  health-url: http://127.0.0.1:99999/\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		in := newInstance(t, settings.Options{File: path})
		if err := in.live.Reload(); err == nil {
			t.Fatal("the file reloaded")
		}
		if errs := in.live.Document().FileErrors; len(errs) != 1 || !strings.Contains(errs[0], "proxy.health-url: ") || !strings.Contains(errs[0], "1-65535") {
			t.Fatalf("errors %q", errs)
		}
	})
	t.Run("OPS-7/health-url-ports-in-range-accepted", func(t *testing.T) {
		for _, u := range []string{"http://127.0.0.1:1/", "https://api.example:65535/v1", "https://api.example/"} {
			if _, fes := settings.Check(with(startValues(), settings.HealthURL, u), settings.Env{}); fes != nil {
				t.Errorf("%s: %v", u, fes)
			}
		}
	})
}
