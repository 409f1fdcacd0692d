package route

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

func candKeys(cs []candidate.Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Key()
	}
	return out
}

func TestBuildCandidates(t *testing.T) {
	t.Run("GW-1/default-order", func(t *testing.T) {
		cs, warns, err := BuildCandidates(CandidateSpec{
			UpstreamHost: "127.0.0.1", UpstreamPort: 7897,
			Gateways: []string{"gw1.example:3128", "http://gw2.example:8080/"},
			EnvProxies: []EnvProxy{{"HTTPS_PROXY", "http://env1.example:1"}, {"http_proxy", ""},
				{"ALL_PROXY", "env2.example:2"}},
			ListenHost: "127.0.0.1", ListenPort: 7898,
		})
		want := []string{"127.0.0.1:7897", "gw1.example:3128", "gw2.example:8080", "env1.example:1", "env2.example:2", "direct"}
		if err != nil || len(warns) != 0 || !slices.Equal(candKeys(cs), want) {
			t.Fatalf("got %v %q %v, want %v", candKeys(cs), warns, err, want)
		}
		if cs[0].Source != "upstream" || cs[1].Source != "gateway" || cs[3].Source != "env:HTTPS_PROXY" || !cs[5].Direct {
			t.Errorf("sources: %+v", cs)
		}
	})
	t.Run("GW-1/upstream-url-wins-over-host", func(t *testing.T) {
		cs, _, err := BuildCandidates(CandidateSpec{UpstreamURL: "http://u:p@up.example:9", UpstreamHost: "127.0.0.1", UpstreamPort: 7897})
		if err != nil || !slices.Equal(candKeys(cs), []string{"up.example:9", "direct"}) || cs[0].Source != "upstream-url" {
			t.Fatalf("got %v %v", candKeys(cs), err)
		}
	})
	t.Run("GW-1/no-upstream", func(t *testing.T) {
		cs, _, err := BuildCandidates(CandidateSpec{})
		if err != nil || !slices.Equal(candKeys(cs), []string{"direct"}) {
			t.Fatalf("got %v %v", candKeys(cs), err)
		}
	})
	t.Run("GW-2/dedupe-first-wins-with-credentials", func(t *testing.T) {
		cs, warns, err := BuildCandidates(CandidateSpec{
			UpstreamURL: "http://alice:secret@GW.example.:3128",
			Gateways:    []string{"gw.example:3128", "http://bob:other@gw.example:3128", "[::1]:9", "[0::1]:9"},
			EnvProxies:  []EnvProxy{{"HTTPS_PROXY", "http://gw.example:3128"}, {"HTTP_PROXY", "http://gw.example:3128"}},
		})
		if err != nil || len(warns) != 0 || !slices.Equal(candKeys(cs), []string{"gw.example:3128", "[::1]:9", "direct"}) {
			t.Fatalf("got %v %q %v", candKeys(cs), warns, err)
		}
		if cs[0].User != "alice" || cs[0].Password != "secret" {
			t.Errorf("first occurrence's credentials not kept: %+v", cs[0])
		}
	})
	t.Run("GW-2/self-loop", func(t *testing.T) {
		for _, c := range []struct {
			listen string
			gw     string
			self   bool
		}{
			{"127.0.0.1", "127.0.0.1:7898", true},
			{"127.0.0.1", "127.0.0.2:7898", true},
			{"127.0.0.1", "localhost:7898", true},
			{"127.0.0.1", "LOCALHOST.:7898", true},
			{"127.0.0.1", "[::1]:7898", true},
			{"127.0.0.1", "0.0.0.0:7898", true},
			{"127.0.0.1", "[::ffff:127.0.0.1]:7898", true},
			{"127.0.0.1", "127.0.0.1:7899", false},
			{"127.0.0.1", "10.0.0.5:7898", false},
			{"192.168.1.5", "192.168.1.5:7898", true},
			{"myhost.lan", "MyHost.lan:7898", true},
			{"0.0.0.0", "10.0.0.5:7898", true}, // one of LocalAddrs
			{"::", "10.0.0.6:7898", false},
			{"::", "[::1]:7898", true},
			{"::", "[::1%25lo]:7898", true},
			{"::", "[fe80::5%25eth0]:7898", true}, // GW-3: the zone id is kept, ours has none
			{"fe80::5%eth0", "[fe80::5%25eth0]:7898", true},
			{"127.0.0.1", "[fe80::5%25eth0]:7898", false},
		} {
			cs, warns, err := BuildCandidates(CandidateSpec{
				Gateways: []string{c.gw}, ListenHost: c.listen, ListenPort: 7898,
				LocalAddrs: []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("fe80::5")},
			})
			if err != nil {
				t.Fatal(err)
			}
			if gotSelf := len(cs) == 1; gotSelf != c.self {
				t.Errorf("listen %s gateway %s: excluded=%v, want %v", c.listen, c.gw, gotSelf, c.self)
			}
			if c.self && (len(warns) != 1 || !strings.Contains(warns[0], "own listener")) {
				t.Errorf("listen %s gateway %s: warnings %q", c.listen, c.gw, warns)
			}
		}
	})
	t.Run("GW-2/first-gateway-pointing-at-ourselves-excluded", func(t *testing.T) {
		cs, warns, err := BuildCandidates(CandidateSpec{UpstreamHost: "127.0.0.1", UpstreamPort: 7896,
			Gateways: []string{"gw.example:1"}, ListenHost: "127.0.0.1", ListenPort: 7896})
		if err != nil || !slices.Equal(candKeys(cs), []string{"gw.example:1", "direct"}) || len(warns) != 1 {
			t.Fatalf("got %v %q %v", candKeys(cs), warns, err)
		}
	})
	t.Run("GW-3/bad-upstream-url-is-error", func(t *testing.T) {
		for _, u := range []string{"socks4://u:hunter2@gw.example:1080", "socks4a://u:hunter2@gw.example:1080",
			"https://u:hunter2@gw.example:443/?x=1", "socks5://u:hunter2@gw.example:1080/?ca=x",
			"http://u:hunter2@gw.example:99999", "http://u:hun%zzter2@gw.example:1", "http://u:hunter2@:1", "http://u:hunter2@gw.example:1/path"} {
			_, _, err := BuildCandidates(CandidateSpec{UpstreamURL: u})
			if err == nil {
				t.Errorf("%s accepted", u)
				continue
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "hun%zzter2") {
				t.Errorf("error leaks the password: %v", err)
			}
		}
	})
	t.Run("GW-3/bad-extras-skipped-with-one-redacted-warning-each", func(t *testing.T) {
		cs, warns, err := BuildCandidates(CandidateSpec{
			Gateways: []string{"socks4://u:hunter2@a.example:1080", "ok.example:1", "socks4a://b.example:1080"},
			EnvProxies: []EnvProxy{{"HTTPS_PROXY", "socks4://u:hunter2@a.example:1080"}, {"https_proxy", "socks4://u:hunter2@a.example:1080"},
				{"ALL_PROXY", "socks5://u:hunter2@c.example:1/x"}, {"all_proxy", "http://u:hun%zzter2@d.example:1"}, {"HTTP_PROXY", "not a url"}},
		})
		if err != nil || !slices.Equal(candKeys(cs), []string{"ok.example:1", "direct"}) {
			t.Fatalf("got %v %v", candKeys(cs), err)
		}
		if len(warns) != 5 {
			t.Errorf("want one warning per distinct bad value (5), got %d: %q", len(warns), warns)
		}
		if !strings.Contains(warns[0], "socks5") {
			t.Errorf("the socks4 warning should point to socks5: %s", warns[0])
		}
		for _, w := range warns {
			if strings.Contains(w, "hunter2") || strings.Contains(w, "zzter2") {
				t.Errorf("warning leaks a password: %s", w)
			}
		}
	})
}

// TestSkippedGatewayWarnings: a gateway value BuildCandidates skips is
// named by its place and masked form, and neither the form nor the reason
// repeats its password, however the value is malformed: the warnings reach
// the log and the settings and status documents, which need no token
// (SPEC OPS-7, GW-3).
func TestSkippedGatewayWarnings(t *testing.T) {
	const pw = "s3cr3t"
	cases := []struct{ why, value string }{
		{"unsupported scheme", "socks4://u:" + pw + "@h.example:1"},
		{"unknown scheme", "ftp://u:" + pw + "@h.example:1"},
		{"path", "http://u:" + pw + "@h.example:1/path"},
		{"fragment", "http://u:" + pw + "@h.example:1#frag"},
		{"query on http", "http://u:" + pw + "@h.example:1?ca=x"},
		{"unknown https parameter", "https://u:" + pw + "@h.example:1?" + pw},
		{"password as https parameter", "https://h.example:1?ca=x&" + pw + "=1"},
		{"empty ca", "https://u:" + pw + "@h.example:1?ca="},
		{"bad escape in password", "http://u:" + pw + "%zz@h.example:1"},
		{"bad escape in user", "http://u%zz:" + pw + "@h.example:1"},
		{"socks5 password without user", "socks5://:" + pw + "@h.example:1"},
		{"host left out", "http://u:" + pw},
		{"host left out, no scheme", "u:" + pw},
		{"host left out, path", "http://u:" + pw + "/"},
		{"numeric password, host left out", "http://u:987654321"},
		{"password as port", "http://u:" + pw + "@h.example:" + pw},
		{"no host", "http://u:" + pw + "@"},
		{"two ports", "http://u:" + pw + "@h.example:1:2"},
		{"user:pass:host typo", "http://u:" + pw + ":h.example:1"},
		{"port out of range", "http://u:" + pw + "@h.example:99999"},
		{"bad zone", "http://u:" + pw + "@[fe80::1%25a!]:1"},
		{"bad host", "http://u:" + pw + "@bad_host!:1"},
		{"space in port", "http://u:" + pw + "@h.example:1 x"},
		{"own listener", "http://u:" + pw + "@127.0.0.1:7898"},
	}
	var values []string
	for _, c := range cases {
		values = append(values, c.value)
	}
	cs, warns, err := BuildCandidates(CandidateSpec{
		Gateways: values, ListenHost: "127.0.0.1", ListenPort: 7898,
		EnvProxies: []EnvProxy{{"HTTPS_PROXY", "http://u:" + pw + "@h.example:1/x"}},
	})
	if err != nil || !slices.Equal(candKeys(cs), []string{"direct"}) {
		t.Fatalf("got %v %v, want every gateway skipped", candKeys(cs), err)
	}
	if len(warns) != len(cases)+1 {
		t.Fatalf("want one warning per value (%d), got %d: %q", len(cases)+1, len(warns), warns)
	}
	for i, c := range cases {
		t.Run("OPS-7/warning-repeats-no-password/"+strings.ReplaceAll(c.why, " ", "-"), func(t *testing.T) {
			w := warns[i]
			if strings.Contains(w, pw) || strings.Contains(w, "987654321") {
				t.Errorf("%s: warning repeats the password: %s", c.value, w)
			}
			if want := fmt.Sprintf("skipping gateway[%d] (", i); !strings.HasPrefix(w, want) {
				t.Errorf("%s: warning %q does not start with %q", c.value, w, want)
			}
		})
	}
	t.Run("OPS-7/environment-gateway-named-by-its-variable", func(t *testing.T) {
		w := warns[len(cases)]
		if !strings.HasPrefix(w, "skipping gateway from HTTPS_PROXY (http://u:***@h.example:1/x)") || strings.Contains(w, pw) {
			t.Errorf("warning %q", w)
		}
	})
	t.Run("OPS-7/bad-upstream-url-error-repeats-no-password", func(t *testing.T) {
		for _, u := range []string{"http://u:" + pw, "http://u:" + pw + "@h.example:" + pw, "https://h.example:1?" + pw} {
			if _, _, err := BuildCandidates(CandidateSpec{UpstreamURL: u}); err == nil || strings.Contains(err.Error(), pw) {
				t.Errorf("%s: err = %v", u, err)
			}
		}
	})
}

func TestParseGateway(t *testing.T) {
	t.Run("GW-4/percent-decoding", func(t *testing.T) {
		c, err := ParseGateway("http://user%20name:p%40ss@h:1", "gateway")
		if err != nil {
			t.Fatal(err)
		}
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte("user name:p@ss"))
		if got := c.ProxyAuthorization(); got != want {
			t.Fatalf("ProxyAuthorization = %q, want %q", got, want)
		}
		if s := c.String(); strings.Contains(s, "p@ss") || strings.Contains(s, "p%40ss") {
			t.Fatalf("String leaks the password: %s", s)
		}
	})
	t.Run("GW-4/malformed-escape-is-error-without-password", func(t *testing.T) {
		for _, u := range []string{"http://us%zzer:secretpw@h:1", "http://user:secret%zpw@h:1", "http://user:secretpw%@h:1"} {
			_, err := ParseGateway(u, "gateway")
			if err == nil || strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: err = %v", u, err)
			}
		}
	})
	t.Run("GW-2/normalized-address", func(t *testing.T) {
		for in, want := range map[string]string{
			"http://GW.Example.:3128":     "gw.example:3128",
			"gw.example":                  "gw.example:80",
			"http://[0:0::1]:8080":        "[::1]:8080",
			"[::1]":                       "[::1]:80",
			"http://bücher.example:1":     "xn--bcher-kva.example:1",
			"HTTP://127.0.0.1.:1/":        "127.0.0.1:1",
			"http://u@gw.example:1":       "gw.example:1",
			"http://u:@gw.example:1":      "gw.example:1",
			"http://a:b:c@gw.example:010": "gw.example:10",
		} {
			c, err := ParseGateway(in, "gateway")
			if err != nil || c.Addr != want {
				t.Errorf("ParseGateway(%q) = %q, %v; want %q", in, c.Addr, err, want)
			}
		}
	})
	t.Run("GW-3/ipv6-zone-id-kept-for-the-dial", func(t *testing.T) {
		for in, want := range map[string]string{
			"http://[fe80::1%25eth0]:3128":       "[fe80::1%eth0]:3128",
			"http://[FE80:0::1%eth0]:3128":       "[fe80::1%eth0]:3128", // curl's bare form
			"socks5h://u:p@[fe80::1%252]:1080":   "[fe80::1%2]:1080",    // Windows zone index
			"[fe80::1%25en0]":                    "[fe80::1%en0]:80",
			"https://[fe80::1%25br-lan.10]:8443": "[fe80::1%br-lan.10]:8443",
			"http://[fe80::1%25eth%30]:1":        "[fe80::1%eth0]:1", // RFC 6874 pct-encoded
		} {
			c, err := ParseGateway(in, "gateway")
			if err != nil || c.Addr != want {
				t.Errorf("ParseGateway(%q) = %q, %v; want %q", in, c.Addr, err, want)
			}
			// The display form (status, logs, --print-config) keeps the
			// zone and parses back to the same dial address.
			if again, err := ParseGateway(c.String(), "gateway"); err != nil || again.Addr != c.Addr || again.Kind != c.Kind {
				t.Errorf("display form %q of %q parses to %s %q, %v", c.String(), in, again.Kind, again.Addr, err)
			}
		}
		a, _ := ParseGateway("http://[fe80::1%25eth0]:1", "gateway")
		b, _ := ParseGateway("http://[fe80::1%25eth1]:1", "gateway")
		if a.Key() == b.Key() {
			t.Errorf("one link-local address on two links is one candidate: %q", a.Key())
		}
		for _, in := range []string{"http://[fe80::1%25]:1", "http://[fe80::1%]:1", "http://[fe80::1%25a%2Fb]:1",
			"http://[fe80::1%25%zz]:1", "http://[fe80::1%25" + strings.Repeat("e", 65) + "]:1", "http://1.2.3.4%25eth0:1"} {
			if c, err := ParseGateway(in, "gateway"); err == nil {
				t.Errorf("ParseGateway(%q) = %+v, want error", in, c)
			}
		}
	})
	t.Run("GW-3/rejects", func(t *testing.T) {
		for _, in := range []string{"", "  ", "socks4://h:1", "socks4a://h:1", "socks://h:1", "ftp://h:1", "://h:1",
			"https://h:1/path", "https://h:1?x=y", "https://h:1?ca=", "https://h:1?ca=a&ca=b", "https://h:1?ca=a#f",
			"socks5://h:1?ca=x", "http://h:1?ca=x", "socks5://:pw@h:1", "socks5h://" + strings.Repeat("u", 256) + ":p@h:1",
			"http://h:0", "http://h:65536", "http://h:x", "http://h:1/path", "http://h:1?q", "http://:1",
			"http://exa mple:1", "http://a_b..c:1", "http://[::1:1", "http://::1:80", "http://127.1:80", "http://h*:1"} {
			if c, err := ParseGateway(in, "gateway"); err == nil {
				t.Errorf("ParseGateway(%q) = %+v, want error", in, c)
			}
		}
	})
}

func TestParseGatewayKinds(t *testing.T) {
	cases := []struct {
		name, in   string
		kind       candidate.Kind
		addr, user string
		auth       bool
		ca, str    string
	}{
		{"GW-3/bare-host-port-is-http", "gw.example:3128", candidate.KindHTTP, "gw.example:3128", "", false, "", "http://gw.example:3128"},
		{"GW-6/https-default-port-443", "HTTPS://Proxy.Example", candidate.KindHTTPS, "proxy.example:443", "", false, "", "https://proxy.example:443"},
		{"GW-6/https-with-credentials", "https://u:p%40ss@proxy.example:8443/", candidate.KindHTTPS, "proxy.example:8443", "u", true, "", "https://u:***@proxy.example:8443"},
		{"GW-6/https-ca-query", "https://proxy.example:8443/?ca=%2Fetc%2Fcorp%20ca.pem", candidate.KindHTTPS, "proxy.example:8443", "", false, "/etc/corp ca.pem", "https://proxy.example:8443"},
		{"GW-6/https-ca-query-without-slash", "https://[::1]:8443?ca=ca.pem", candidate.KindHTTPS, "[::1]:8443", "", false, "ca.pem", "https://[::1]:8443"},
		{"GW-7/socks5-default-port-1080", "socks5://127.0.0.1", candidate.KindSOCKS5, "127.0.0.1:1080", "", false, "", "socks5://127.0.0.1:1080"},
		{"GW-7/socks5h-with-credentials", "socks5h://gwuser:gw%3Apass@127.0.0.1:7890", candidate.KindSOCKS5H, "127.0.0.1:7890", "gwuser", true, "", "socks5h://gwuser:***@127.0.0.1:7890"},
		{"GW-7/socks5-user-only", "socks5://gwuser@[::1]:1080", candidate.KindSOCKS5, "[::1]:1080", "gwuser", true, "", "socks5://gwuser:***@[::1]:1080"},
		{"GW-7/socks5-empty-userinfo-is-no-auth", "socks5h://@h.example:1", candidate.KindSOCKS5H, "h.example:1", "", false, "", "socks5h://h.example:1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseGateway(tc.in, "gateway")
			if err != nil {
				t.Fatal(err)
			}
			if c.Kind != tc.kind || c.Addr != tc.addr || c.User != tc.user || c.HasAuth != tc.auth || c.CAFile != tc.ca {
				t.Fatalf("got %+v", c)
			}
			if c.String() != tc.str {
				t.Errorf("String = %q, want %q", c.String(), tc.str)
			}
		})
	}
	t.Run("GW-7/socks-credentials-never-become-proxy-authorization", func(t *testing.T) {
		c, _ := ParseGateway("socks5h://u:p@h:1", "gateway")
		if c.ProxyAuthorization() != "" || c.SpeaksHTTP() || !c.IsSOCKS() {
			t.Fatalf("socks5h candidate: auth %q, speaks HTTP %v", c.ProxyAuthorization(), c.SpeaksHTTP())
		}
		h, _ := ParseGateway("https://u:p@h:1", "gateway")
		if h.ProxyAuthorization() != "Basic dTpw" || !h.SpeaksHTTP() {
			t.Fatalf("https candidate: auth %q", h.ProxyAuthorization())
		}
	})
	t.Run("GW-3/socks4-refused-with-hint", func(t *testing.T) {
		_, err := ParseGateway("socks4a://h:1080", "gateway")
		if !errors.Is(err, ErrUnsupportedScheme) || !strings.Contains(err.Error(), "socks5h://") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:secret@h:1":          "http://u:***@h:1",
		"socks5://u:p@ss@h:1":          "socks5://u:***@h:1",
		"u:secret@h:1":                 "u:***@h:1",
		"http://h:1":                   "http://h:1",
		"http://user@h:1":              "http://user@h:1",
		"not a url":                    "not a url",
		"http://u:se%zzcret@h:1/x?y=z": "http://u:***@h:1/x?***",
		"https://h:1/?ca=a.pem&k=v#f":  "https://h:1/?ca=a.pem&***#***",
		"http://u:p@h:secret":          "http://u:***@h:***",
		"http://u:secret":              "http://u:***",
		"u:secret/x":                   "u:***/x",
		"http://u:99999":               "http://u:99999",
		"http://u:987654":              "http://u:***",
		"[::1]:secret":                 "[::1]:***",
		"[::1]:8080":                   "[::1]:8080",
		"h:08080":                      "h:08080",
		"http://h:":                    "http://h:",
		"http://[fe80::1%25eth0]:3128": "http://[fe80::1%25eth0]:3128",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseGateway(f *testing.F) {
	for _, s := range []string{"http://user%20name:p%40ss@h:1", "[::1]:80", "https://u:p@h", "gw.example", "http://u:p%zz@h:1",
		"socks5h://u:p@127.0.0.1:1080", "SOCKS5://[::1]", "https://gw.example:8443/?ca=%2Ftmp%2Fca.pem", "socks4a://h:1", "http://[fe80::1%25eth0]:3128", "[fe80::1%2525x]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := ParseGateway(raw, "gateway")
		// The text between the userinfo's first ':' and its last '@' is the
		// password; an error must never echo it (unless it also appears
		// after the '@', where the error may quote the host).
		if at := strings.LastIndex(raw, "@"); err != nil && at > 0 {
			ui := raw[:at]
			if i := strings.Index(ui, "://"); i >= 0 {
				ui = ui[i+3:]
			}
			if _, p, ok := strings.Cut(ui, ":"); ok && len(p) >= 4 &&
				strings.Contains(err.Error(), p) && !strings.Contains(raw[at+1:], p) {
				t.Fatalf("error %q leaks password %q", err, p)
			}
		}
		if err != nil {
			return
		}
		// Addr is a dial address: its zone id is written "%25" in a URL.
		again, err := ParseGateway(c.Kind.String()+"://"+strings.Replace(c.Addr, "%", "%25", 1), "gateway")
		if err != nil || again.Addr != c.Addr || again.Kind != c.Kind {
			t.Fatalf("%s://%s does not round-trip: %s %q, %v", c.Kind, c.Addr, again.Kind, again.Addr, err)
		}
		if c.CAFile != "" && c.Kind != candidate.KindHTTPS {
			t.Fatalf("ca= accepted for %s", c.Kind)
		}
		if c.IsSOCKS() && c.HasAuth && (c.User == "" || len(c.User) > 255 || len(c.Password) > 255) {
			t.Fatalf("SOCKS5 credentials outside RFC 1929 accepted")
		}
	})
}
