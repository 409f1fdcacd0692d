package settings_test

import (
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// TestMaskedValueMeansTheStoredSecret: "***" where the document shows a
// password (or the health URL's query) means the stored secret of that
// same gateway and nothing else; where there is none to keep, the change
// is refused rather than storing "***" as the password (SPEC OPS-7,
// LIS-4).
func TestMaskedValueMeansTheStoredSecret(t *testing.T) {
	stored := with(startValues(), settings.Gateway, []string{"http://user:hunter2@127.0.0.1:3128", "127.0.0.1:3129"},
		settings.UpstreamURL, "http://127.0.0.1:7897", settings.HealthURL, "https://api.example/")
	for _, tc := range []struct{ name, body, field string }{
		{"OPS-7/masked-password-for-a-gateway-on-another-host-refused", `{"gateway": ["http://user:hunter2@127.0.0.1:3128", "http://user:***@127.0.0.1:4000"]}`, "gateway[1]"},
		{"OPS-7/masked-password-for-a-stored-gateway-without-one-refused", `{"gateway": ["http://user:***@127.0.0.1:3129"]}`, "gateway[0]"},
		{"OPS-7/masked-password-of-another-user-refused", `{"gateway": ["http://other:***@127.0.0.1:3128"]}`, "gateway[0]"},
		{"OPS-7/masked-upstream-url-password-with-none-stored-refused", `{"upstream-url": "http://user:***@127.0.0.1:7897"}`, "upstream-url"},
		{"OPS-7/masked-health-url-query-with-none-stored-refused", `{"health-url": "https://api.example/?***"}`, "health-url"},
		{"OPS-7/masked-health-url-password-with-none-stored-refused", `{"health-url": "https://u:***@api.example/"}`, "health-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := newInstance(t, settings.Options{Values: stored})
			v := in.version(t)
			code, doc := in.put(t, tc.body, v)
			if got := strings.Join(fields(t, doc), " "); code != 400 || got != tc.field {
				t.Fatalf("PUT %d fields %q, want 400 %q (%v)", code, got, tc.field, doc)
			}
			msg := doc["errors"].([]any)[0].(map[string]any)["message"].(string)
			if !strings.Contains(msg, "real") || strings.Contains(msg, "hunter2") {
				t.Fatalf("message %q", msg)
			}
			if in.version(t) != v || in.applies() != 1 {
				t.Fatal("a refused change applied something")
			}
		})
	}
	t.Run("OPS-7/masked-password-of-the-same-gateway-keeps-it", func(t *testing.T) {
		in := newInstance(t, settings.Options{Values: with(stored, settings.UpstreamURL, "http://u:up@127.0.0.1:7897", settings.HealthURL, "https://api.example/?key=k1")})
		code, doc := in.put(t, `{"gateway": ["127.0.0.1:3129", "http://user:***@127.0.0.1:3128"], "upstream-url": "http://u:***@127.0.0.1:7897", "health-url": "https://api.example/?***"}`, in.version(t))
		if code != 200 {
			t.Fatal(code, doc)
		}
		cur := in.live.Current().Values
		if g := cur.List(settings.Gateway); len(g) != 2 || g[1] != "http://user:hunter2@127.0.0.1:3128" {
			t.Fatalf("gateways %v", g)
		}
		if cur.String(settings.UpstreamURL) != "http://u:up@127.0.0.1:7897" || cur.String(settings.HealthURL) != "https://api.example/?key=k1" {
			t.Fatalf("values %v", cur)
		}
	})
	t.Run("OPS-7/masked-password-refused-at-start", func(t *testing.T) {
		_, fes := settings.Check(with(startValues(), settings.Gateway, []string{"http://user:***@127.0.0.1:4000"}), settings.Env{})
		if len(fes) != 1 || fes[0].Field != settings.Gateway || !strings.Contains(fes[0].Message, "real") {
			t.Fatalf("%v", fes)
		}
	})
	t.Run("OPS-7/password-holding-stars-is-a-password", func(t *testing.T) {
		in := newInstance(t, settings.Options{})
		if code, doc := in.put(t, `{"gateway": ["http://user:a***b@127.0.0.1:4000"]}`, in.version(t)); code != 200 {
			t.Fatal(code, doc)
		}
	})
}
