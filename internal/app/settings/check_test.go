package settings_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// startValues is a complete set as a launcher starts with its defaults.
func startValues() settings.Values {
	return settings.Values{
		settings.ListenHost: "127.0.0.1", settings.ListenPort: 7896, settings.PortFallback: 10,
		settings.TimeoutMS: 5000, settings.ResponseTimeout: 60000, settings.LogLevel: "info", settings.LogFormat: "text",
		settings.HealthURL: "", settings.FastFailMS: 2000, settings.RaceDelayMS: 250,
		settings.TunnelIdleMS: 3600000, settings.TunnelHalfMS: 60000, settings.HeadTimeoutMS: 10000,
		settings.PrefTTLMS: 60000, settings.CooldownMS: 30000, settings.HealthInterval: 60000, settings.HealthRecover: 2,
		settings.PreferDirect: []string{}, settings.PreferProxy: []string{}, settings.UpstreamPort: 7897,
		settings.Gateway: []string{}, settings.UpstreamURL: nil, settings.UpstreamHost: "127.0.0.1",
		settings.LoopbackDirect: true, settings.VerifyTLS: true, settings.RetryAfterSend: false, settings.RetryWithKey: false,
	}
}

func with(v settings.Values, kv ...any) settings.Values {
	v = v.Clone()
	for i := 0; i+1 < len(kv); i += 2 {
		v[kv[i].(string)] = kv[i+1]
	}
	return v
}

func TestCheckNamesEveryBadField(t *testing.T) {
	cases := []struct {
		name string
		v    settings.Values
		want []string // "field: message" substrings, in order
	}{
		{"OPS-7/timeout-out-of-range", with(startValues(), settings.TimeoutMS, 0), []string{"timeout-ms: must be 1-604800000, got 0"}},
		{"OPS-7/several-fields-all-named", with(startValues(), settings.CooldownMS, -1, settings.LogLevel, "loud", settings.HealthURL, "ftp://x"),
			[]string{"log-level: want debug, info, warn or error", "health-url: want an http:// or https:// URL", "cooldown-ms: must be 0-604800000, got -1"}},
		{"OPS-7/recover-count", with(startValues(), settings.HealthRecover, 0), []string{"health-recover-count: must be >= 1"}},
		{"OPS-7/gateway-without-port", with(startValues(), settings.Gateway, []string{"proxy.lan"}), []string{"gateway: a gateway has no port (want host:port, e.g. proxy.lan:8080, or an http:// URL)"}},
		{"OPS-7/pasted-key-as-gateway-not-echoed", with(startValues(), settings.Gateway, []string{"sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"}), []string{"gateway: a gateway has no port (want host:port, e.g. proxy.lan:8080, or an http:// URL)"}},
		{"OPS-7/gateway-credentials-not-echoed", with(startValues(), settings.Gateway, []string{"u:secret@host"}), []string{"gateway: a gateway has no port"}},
		{"OPS-7/bad-pattern", with(startValues(), settings.PreferProxy, []string{"a/b"}), []string{"prefer-proxy: "}},
		{"OPS-7/upstream-port", with(startValues(), settings.UpstreamPort, 0), []string{"upstream-port: must be 1-65535, got 0"}},
		{"OPS-7/upstream-url-scheme", with(startValues(), settings.UpstreamURL, "socks4://h:1"), []string{"upstream-url: socks4://: unsupported proxy scheme"}},
		{"OPS-7/wrong-type", with(startValues(), settings.VerifyTLS, "yes"), []string{"verify-tls: missing or of the wrong type"}},
		{"GW-6/upstream-ca-device-refused", with(startValues(), settings.UpstreamURL, "https://127.0.0.1:18510/?ca=/dev/zero"), []string{"upstream-url: https://127.0.0.1:18510: gateway CA file"}},
		{"OPS-7/gateway-list-capped", with(startValues(), settings.Gateway, manyGateways(settings.MaxGateways+1)), []string{"gateway: at most 64 gateways, got 65"}},
		{"OPS-7/listen-host", with(startValues(), settings.ListenHost, "example.com"), []string{"listen-host: want an IP address or localhost"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, fes := settings.Check(tc.v, settings.Env{})
			if len(fes) != len(tc.want) {
				t.Fatalf("errors %v, want %d: %v", fes, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(fes[i].Error(), w) {
					t.Errorf("error %d = %q, want %q", i, fes[i].Error(), w)
				}
				if strings.Contains(fes[i].Message, "secret") {
					t.Errorf("error shows a password: %q", fes[i].Message)
				}
			}
		})
	}
	t.Run("OPS-7/strict-gateways-named-by-item", func(t *testing.T) {
		v := with(startValues(), settings.Gateway, []string{"127.0.0.1:9", "socks4://u:pw@h:1", "127.0.0.1:7896", "h"})
		_, fes := settings.Check(v, settings.Env{StrictGateways: true, BoundPort: 7896})
		var got []string
		for _, fe := range fes {
			got = append(got, fe.Field)
		}
		if strings.Join(got, " ") != "gateway[1] gateway[2] gateway[3]" {
			t.Fatalf("fields %v (%v)", got, fes)
		}
		if strings.Contains(fes[0].Message, "pw") || !strings.Contains(fes[1].Message, "own listener") {
			t.Fatalf("messages %v", fes)
		}
	})
	t.Run("OPS-7/valid-start-values-resolve", func(t *testing.T) {
		r, fes := settings.Check(with(startValues(), settings.Gateway, []string{"socks5://127.0.0.1:1080"}, settings.HealthURL, "https://api.example/x"), settings.Env{})
		if fes != nil {
			t.Fatal(fes)
		}
		if r.HealthURL == nil || r.HealthURL.Host != "api.example" || len(r.Spec.Gateways) != 1 || r.Rules == nil {
			t.Fatalf("resolved %+v", r)
		}
	})
}

func TestParseText(t *testing.T) {
	for _, tc := range []struct {
		key, text string
		want      string
		err       string
	}{
		{settings.CooldownMS, " 500 ", "500", ""},
		{settings.CooldownMS, "5s", "", "want a whole number"},
		{settings.VerifyTLS, "off", "false", ""},
		{settings.VerifyTLS, "maybe", "", "want true or false"},
		{settings.Gateway, "a:1, b:2,,", "a:1,b:2", ""},
		{settings.Gateway, "", "", ""},
		{settings.HealthURL, "", "", ""},
	} {
		t.Run("OPS-7/"+tc.key+"="+tc.text, func(t *testing.T) {
			k, _ := settings.Lookup(tc.key)
			x, err := settings.ParseText(k, tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || settings.Text(x) != tc.want {
				t.Fatalf("got %v %v, want %q", x, err, tc.want)
			}
		})
	}
}

// manyGateways is n distinct loopback gateways.
func manyGateways(n int) []string {
	l := make([]string, n)
	for i := range l {
		l[i] = "127.0.0.1:" + strconv.Itoa(20000+i)
	}
	return l
}
