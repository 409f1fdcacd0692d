package settings_test

import (
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// TestMaskedGatewayMatchesAsTheProxyReadsIt: a masked password sent back
// keeps the stored password of the gateway that is the same as the proxy
// reads both (scheme lower-cased and http when left out, host:port
// normalised, one trailing '/'), not only of the same text; each field
// keeps its own stored password even where two show alike; percent-encoded
// stars are a literal password, no mask (SPEC OPS-7, LIS-4).
func TestMaskedGatewayMatchesAsTheProxyReadsIt(t *testing.T) {
	const stored = "http://bob:pw@127.0.0.1:28501"
	for _, tc := range []struct{ name, sent string }{
		{"OPS-7/masked-gateway-without-scheme-keeps-the-password", "bob:***@127.0.0.1:28501"},
		{"OPS-7/masked-gateway-with-upper-case-scheme-keeps-the-password", "HTTP://bob:***@127.0.0.1:28501"},
		{"OPS-7/masked-gateway-with-trailing-slash-keeps-the-password", "http://bob:***@127.0.0.1:28501/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := newInstance(t, settings.Options{Values: with(startValues(), settings.Gateway, []string{stored})})
			code, doc := in.put(t, `{"gateway": ["socks5://127.0.0.1:4000", "`+tc.sent+`"]}`, in.version(t))
			if code != 200 {
				t.Fatal(code, doc)
			}
			if g := in.live.Current().Values.List(settings.Gateway); len(g) != 2 || g[1] != stored {
				t.Fatalf("gateways %v", g)
			}
		})
	}
	t.Run("OPS-7/masked-upstream-url-with-upper-case-scheme-keeps-the-password", func(t *testing.T) {
		in := newInstance(t, settings.Options{Values: with(startValues(), settings.UpstreamURL, "http://u:up@127.0.0.1:7897")})
		if code, doc := in.put(t, `{"upstream-url": "HTTP://u:***@127.0.0.1:7897/"}`, in.version(t)); code != 200 {
			t.Fatal(code, doc)
		}
		if u := in.live.Current().Values.String(settings.UpstreamURL); u != "http://u:up@127.0.0.1:7897" {
			t.Fatalf("upstream-url %q", u)
		}
	})
	t.Run("OPS-7/percent-encoded-stars-are-a-literal-password", func(t *testing.T) {
		in := newInstance(t, settings.Options{Values: with(startValues(), settings.Gateway, []string{stored})})
		if code, doc := in.put(t, `{"gateway": ["http://bob:%2A%2A%2A@127.0.0.1:28501"]}`, in.version(t)); code != 200 {
			t.Fatal(code, doc)
		}
		if g := in.live.Current().Values.List(settings.Gateway); len(g) != 1 || g[0] != "http://bob:%2A%2A%2A@127.0.0.1:28501" {
			t.Fatalf("gateways %v", g)
		}
	})
	t.Run("OPS-7/gateway-and-upstream-url-that-show-alike-keep-their-own-passwords", func(t *testing.T) {
		in := newInstance(t, settings.Options{Values: with(startValues(), settings.Gateway, []string{"http://alice:gw@127.0.0.1:28501"},
			settings.UpstreamURL, "http://alice:up@127.0.0.1:28501")})
		body := `{"gateway": ["http://alice:***@127.0.0.1:28501"], "upstream-url": "http://alice:***@127.0.0.1:28501", "cooldown-ms": 1000}`
		if code, doc := in.put(t, body, in.version(t)); code != 200 {
			t.Fatal(code, doc)
		}
		cur := in.live.Current().Values
		if g := cur.List(settings.Gateway); len(g) != 1 || g[0] != "http://alice:gw@127.0.0.1:28501" || cur.String(settings.UpstreamURL) != "http://alice:up@127.0.0.1:28501" {
			t.Fatalf("gateways %v, upstream-url %q", g, cur.String(settings.UpstreamURL))
		}
	})
}
