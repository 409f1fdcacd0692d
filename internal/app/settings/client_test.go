package settings_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

func TestClient(t *testing.T) {
	ctx := context.Background()
	in := newInstance(t, settings.Options{Values: with(startValues(), settings.Gateway, []string{"http://u:pw@127.0.0.1:3128"})})
	c := &settings.Client{Addr: strings.TrimPrefix(in.srv.URL, "http://"), Token: testToken, Kind: "cli"}
	t.Run("OPS-7/client-set-text-values", func(t *testing.T) {
		doc, err := c.Set(ctx, map[string]any{settings.CooldownMS: "1500", settings.VerifyTLS: "false"})
		if err != nil || doc.Settings[settings.CooldownMS] != 1500.0 || doc.Settings[settings.VerifyTLS] != false {
			t.Fatalf("%v %v", doc.Settings, err)
		}
	})
	t.Run("OPS-7/client-gateway-add-and-remove-keep-the-password", func(t *testing.T) {
		if _, _, err := c.AddGateway(ctx, "socks5://127.0.0.1:1080"); err != nil {
			t.Fatal(err)
		}
		if g := in.live.Current().Values.List(settings.Gateway); len(g) != 2 || g[0] != "http://u:pw@127.0.0.1:3128" {
			t.Fatalf("gateways %v", g)
		}
		if _, _, err := c.RemoveGateway(ctx, "http://u:pw@127.0.0.1:3128"); err != nil {
			t.Fatal(err)
		}
		if g := in.live.Current().Values.List(settings.Gateway); len(g) != 1 || g[0] != "socks5://127.0.0.1:1080" {
			t.Fatalf("gateways %v", g)
		}
		_, _, err := c.RemoveGateway(ctx, "127.0.0.1:9")
		var re *settings.RemoteError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "is not a gateway of this instance (its gateways: socks5://127.0.0.1:1080)") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("OPS-7/client-gateway-host-port-and-http-url-are-one-gateway", func(t *testing.T) {
		if _, err := c.Set(ctx, map[string]any{settings.Gateway: []string{"127.0.0.1:3128", "http://u:pw@127.0.0.1:8080"}}); err != nil {
			t.Fatal(err)
		}
		// Adding the URL spelling of a gateway already listed as host:port
		// is that gateway as the proxy reads it: nothing changes.
		_, ed, err := c.AddGateway(ctx, "http://127.0.0.1:3128")
		if err != nil || ed.Verb != "unchanged" || ed.Index != 0 {
			t.Fatal(ed, err)
		}
		if g := in.live.Current().Values.List(settings.Gateway); len(g) != 2 || g[0] != "127.0.0.1:3128" || g[1] != "http://u:pw@127.0.0.1:8080" {
			t.Fatalf("gateways %v", g)
		}
		// Removing by the bare spelling, and by the URL without the
		// password, removes them.
		if _, _, err := c.RemoveGateway(ctx, "127.0.0.1:3128"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.RemoveGateway(ctx, "http://u:***@127.0.0.1:8080"); err != nil {
			t.Fatal(err)
		}
		if g := in.live.Current().Values.List(settings.Gateway); len(g) != 0 {
			t.Fatalf("gateways %v", g)
		}
		for _, tc := range []struct {
			a, b string
			same bool
		}{
			{"127.0.0.1:3128", "http://127.0.0.1:3128", true},
			{"HTTP://127.0.0.1:3128", "127.0.0.1:3128", true},
			{"http://u:a@h.example:1", "http://u:b@h.example:1", true},
			{"socks5://127.0.0.1:1080", "127.0.0.1:1080", false},
			{"https://h.example", "h.example:443", false},
			{"https://h.example", "https://h.example:443", true},
			{"not a gateway", "not a gateway", true},
			{"not a gateway", "http://not a gateway", false},
		} {
			if got := settings.SameGateway(tc.a, tc.b); got != tc.same {
				t.Errorf("SameGateway(%q, %q) = %v", tc.a, tc.b, got)
			}
		}
	})
	t.Run("OPS-7/client-field-errors-and-token", func(t *testing.T) {
		_, err := c.Set(ctx, map[string]any{settings.CooldownMS: "-1"})
		var re *settings.RemoteError
		if !errors.As(err, &re) || re.Status != 400 || err.Error() != "cooldown-ms: must be 0-604800000, got -1" {
			t.Fatalf("err %v", err)
		}
		bad := *c
		bad.Token = "wrong"
		if _, err := bad.Set(ctx, map[string]any{settings.CooldownMS: "1"}); !errors.As(err, &re) || re.Status != 401 {
			t.Fatalf("err %v", err)
		}
	})
}
