package settings_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// hosts are n host patterns.
func hosts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("*.h%d.example", i)
	}
	return out
}

// TestHostListsAreCapped: prefer-direct and prefer-proxy hold at most
// MaxHostPatterns patterns from every source, a longer list refused
// naming the key and the limit (SPEC OPS-7, ORD-3).
func TestHostListsAreCapped(t *testing.T) {
	limit := fmt.Sprint(settings.MaxHostPatterns)
	for _, key := range []string{settings.PreferDirect, settings.PreferProxy} {
		t.Run("OPS-7/"+key+"-over-the-limit-refused-by-the-api", func(t *testing.T) {
			in := newInstance(t, settings.Options{})
			v := in.version(t)
			body, _ := json.Marshal(map[string]any{key: hosts(settings.MaxHostPatterns + 1)})
			code, doc := in.put(t, string(body), v)
			if got := strings.Join(fields(t, doc), " "); code != 400 || got != key {
				t.Fatalf("PUT %d fields %q, want 400 %s", code, got, key)
			}
			if msg := doc["errors"].([]any)[0].(map[string]any)["message"].(string); !strings.Contains(msg, limit) {
				t.Fatalf("message %q names no limit", msg)
			}
			if in.version(t) != v {
				t.Fatal("a refused change applied something")
			}
		})
		t.Run("OPS-7/"+key+"-at-the-limit-applies", func(t *testing.T) {
			in := newInstance(t, settings.Options{})
			body, _ := json.Marshal(map[string]any{key: hosts(settings.MaxHostPatterns)})
			if code, doc := in.put(t, string(body), in.version(t)); code != 200 {
				t.Fatal(code, doc["errors"])
			}
		})
		t.Run("OPS-7/"+key+"-over-the-limit-refused-at-start", func(t *testing.T) {
			_, fes := settings.Check(with(startValues(), key, hosts(settings.MaxHostPatterns+1)), settings.Env{})
			if len(fes) != 1 || fes[0].Field != key || !strings.Contains(fes[0].Message, limit) {
				t.Fatalf("%v", fes)
			}
		})
		t.Run("OPS-7/"+key+"-over-the-limit-refused-in-the-file", func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			text := "proxy:\n  " + key + ": [" + strings.Join(hosts(settings.MaxHostPatterns+1), ", ") + "]\n"
			text = strings.ReplaceAll(text, "*", "'*") // quoted: a YAML alias starts with '*'
			text = strings.ReplaceAll(text, ".example", ".example'")
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			in := newInstance(t, settings.Options{File: path})
			if err := in.live.Reload(); err == nil {
				t.Fatal("the file reloaded")
			}
			errs := in.live.Document().FileErrors
			if len(errs) != 1 || !strings.Contains(errs[0], "proxy."+key+": ") || !strings.Contains(errs[0], limit) {
				t.Fatalf("errors %q", errs)
			}
		})
	}
}

// TestNoProxyCountsTowardPreferDirectCap: the startup NO_PROXY union is
// matched as prefer-direct patterns, so it counts toward prefer-direct's
// MaxHostPatterns; over the limit together is refused at prefer-direct
// naming both sources (SPEC OPS-7, ORD-3).
func TestNoProxyCountsTowardPreferDirectCap(t *testing.T) {
	noProxy := strings.Join(hosts(settings.MaxHostPatterns), ",")
	t.Run("OPS-7/prefer-direct-and-NO_PROXY-over-the-limit-refused", func(t *testing.T) {
		_, fes := settings.Check(with(startValues(), settings.PreferDirect, []string{"one.example"}), settings.Env{NoProxy: noProxy})
		if len(fes) != 1 || fes[0].Field != settings.PreferDirect || !strings.Contains(fes[0].Message, fmt.Sprint(settings.MaxHostPatterns)) ||
			!strings.Contains(fes[0].Message, "NO_PROXY") || !strings.Contains(fes[0].Message, "1 from prefer-direct") {
			t.Fatalf("%v", fes)
		}
	})
	t.Run("OPS-7/NO_PROXY-alone-at-the-limit-applies", func(t *testing.T) {
		if _, fes := settings.Check(startValues(), settings.Env{NoProxy: noProxy + ", ,"}); len(fes) != 0 {
			t.Fatalf("%v", fes)
		}
	})
}
