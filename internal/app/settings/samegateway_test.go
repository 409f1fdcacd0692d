package settings_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// TestOneHostPortIsOneGateway: the proxy keeps one candidate per
// host:port, the first (SPEC GW-2), so a change whose gateway list names
// one host:port twice would not run as written: it is refused at the
// later item, naming the earlier one; gateway add and remove compare
// gateways by host:port as the proxy does (SPEC OPS-7).
func TestOneHostPortIsOneGateway(t *testing.T) {
	t.Run("OPS-7/two-gateways-of-one-host-port-refused-naming-both", func(t *testing.T) {
		in := newInstance(t, settings.Options{Values: with(startValues(), settings.Gateway, []string{"http://127.0.0.1:3129"})})
		v := in.version(t)
		code, doc := in.put(t, `{"gateway": ["http://127.0.0.1:3129", "socks5://127.0.0.1:4000", "http://alice:pw@127.0.0.1:3129"]}`, v)
		if got := strings.Join(fields(t, doc), " "); code != 400 || got != "gateway[2]" {
			t.Fatalf("PUT %d fields %q, want 400 gateway[2] (%v)", code, got, doc)
		}
		msg := doc["errors"].([]any)[0].(map[string]any)["message"].(string)
		if !strings.Contains(msg, "gateway[0]") || !strings.Contains(msg, "127.0.0.1:3129") || strings.Contains(msg, "pw") {
			t.Fatalf("message %q", msg)
		}
		if in.version(t) != v || in.applies() != 1 {
			t.Fatal("a refused change applied something")
		}
	})
	t.Run("OPS-7/start-with-two-gateways-of-one-host-port-warns", func(t *testing.T) {
		r, fes := settings.Check(with(startValues(), settings.Gateway, []string{"http://127.0.0.1:3129", "http://alice:pw@127.0.0.1:3129"}), settings.Env{})
		if fes != nil {
			t.Fatal(fes)
		}
		if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, "skipping gateway[1] (http://alice:***@127.0.0.1:3129): names the host:port of gateway[0]") || strings.Contains(w, "pw@") {
			t.Fatalf("warnings %q", w)
		}
	})
	ctx := context.Background()
	in := newInstance(t, settings.Options{Values: with(startValues(), settings.Gateway, []string{"http://127.0.0.1:3129", "socks5://127.0.0.1:4000"})})
	c := &settings.Client{Addr: strings.TrimPrefix(in.srv.URL, "http://"), Token: testToken, Kind: "cli"}
	gateways := func() []string { return in.live.Current().Values.List(settings.Gateway) }
	t.Run("OPS-7/add-of-a-listed-host-port-with-credentials-replaces-it-in-place", func(t *testing.T) {
		_, ed, err := c.AddGateway(ctx, "http://alice:pw@127.0.0.1:3129")
		if err != nil || ed.Verb != "replaced" || ed.Index != 0 || ed.New != "http://alice:***@127.0.0.1:3129" || len(ed.Old) != 1 || ed.Old[0] != "http://127.0.0.1:3129" {
			t.Fatalf("%+v %v", ed, err)
		}
		if g := gateways(); len(g) != 2 || g[0] != "http://alice:pw@127.0.0.1:3129" || g[1] != "socks5://127.0.0.1:4000" {
			t.Fatalf("gateways %v", g)
		}
	})
	t.Run("OPS-7/add-of-the-same-gateway-changes-nothing", func(t *testing.T) {
		v := in.version(t)
		for _, g := range []string{"http://alice:pw@127.0.0.1:3129", "http://alice:***@127.0.0.1:3129", "alice:***@127.0.0.1:3129"} {
			_, ed, err := c.AddGateway(ctx, g)
			if err != nil || ed.Verb != "unchanged" || ed.Index != 0 {
				t.Fatalf("%s: %+v %v", g, ed, err)
			}
		}
		if in.version(t) != v {
			t.Fatal("an add of a listed gateway made a new version")
		}
	})
	t.Run("OPS-7/add-of-another-password-or-scheme-replaces-it", func(t *testing.T) {
		if _, ed, err := c.AddGateway(ctx, "http://alice:pw2@127.0.0.1:3129"); err != nil || ed.Verb != "replaced" {
			t.Fatalf("%+v %v", ed, err)
		}
		if g := gateways(); len(g) != 2 || g[0] != "http://alice:pw2@127.0.0.1:3129" {
			t.Fatalf("gateways %v", g)
		}
		if _, ed, err := c.AddGateway(ctx, "127.0.0.1:4000"); err != nil || ed.Verb != "replaced" || ed.Index != 1 {
			t.Fatalf("%+v %v", ed, err)
		}
		if g := gateways(); len(g) != 2 || g[1] != "127.0.0.1:4000" {
			t.Fatalf("gateways %v", g)
		}
	})
	t.Run("OPS-7/remove-by-host-port-removes-the-gateway-with-credentials", func(t *testing.T) {
		_, ed, err := c.RemoveGateway(ctx, "http://127.0.0.1:3129")
		if err != nil || ed.Index != 0 || len(ed.Old) != 1 || ed.Old[0] != "http://alice:***@127.0.0.1:3129" {
			t.Fatalf("%+v %v", ed, err)
		}
		if g := gateways(); len(g) != 1 || g[0] != "127.0.0.1:4000" {
			t.Fatalf("gateways %v", g)
		}
		if _, _, err := c.AddGateway(ctx, "http://bob:pw@127.0.0.1:3129"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.RemoveGateway(ctx, "http://bob:***@127.0.0.1:3129"); err != nil {
			t.Fatal(err)
		}
		if g := gateways(); len(g) != 1 || g[0] != "127.0.0.1:4000" {
			t.Fatalf("gateways %v", g)
		}
	})
}
