package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// parseTargetURL is the url.Parse based parseTarget that the byte parser
// replaced, kept verbatim as the reference of FuzzParseTarget.
// Known defect, fixed by the byte parser: it looked for the path in the
// raw target before cutting the fragment, so "http://a#x/y" went to the
// origin as "/y".
func parseTargetURL(raw, method string) (*target, error) {
	u, err := url.Parse(raw)
	if err != nil || !strings.EqualFold(u.Scheme, "http") || u.Host == "" || u.User != nil {
		if err == nil && strings.EqualFold(u.Scheme, "https") {
			return nil, errors.New("https:// targets must use CONNECT")
		}
		return nil, errors.New("absolute-form http:// target required")
	}
	host, err := route.NormalizeHost(u.Hostname())
	if err != nil {
		return nil, errors.New("bad host")
	}
	port := 80
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return nil, errors.New("bad port")
		}
	}
	// "http://authority" + path-and-query, taken from the raw bytes.
	rest := raw[len(u.Scheme)+3:]
	i := strings.IndexAny(rest, "/?")
	path := "/"
	if i >= 0 {
		path = rest[i:]
		if path[0] == '?' {
			path = "/" + path
		}
	} else if method == http.MethodOptions {
		path = "*" // RFC 9112 §3.2.4
	}
	if j := strings.IndexByte(path, '#'); j >= 0 {
		path = path[:j]
	}
	t := &target{authority: u.Host, host: host, port: port, origin: path}
	t.absolute = "http://" + u.Host + path
	if path == "*" {
		t.absolute = "http://" + u.Host
	}
	return t, nil
}

var targetSeeds = []string{
	"http://127.0.0.1:8080/", "http://Example.COM./a%2Fb|c?q=1&r", "HTTP://example.com", "http://example.com?x",
	"http://[::1]:8080/p", "http://[fe80::1%25eth0]:80/", "http://[fe80::1%25%65th0]/", "http://[::ffff:1.2.3.4]/",
	"http://[1.2.3.4]/", "http://%C3%A9xample.com/", "http://b%C3%BCcher.example:81/x", "http://%41.com/",
	"http://user:pw@example.com/", "http://@example.com/", "https://example.com/", "ftp://example.com/",
	"http://example.com:0/", "http://example.com:65536/", "http://example.com:/", "http://a:1:2/",
	"http://a/%zz", "http://a/?%zz", "http://a/#%zz", "http://a#x/y", "http:/a", "http:///a", "*", "/origin-form",
	"http://a\x01/", "http://a/\x7f", "http://a]b/", "http://a[b]/", "http://[::1/", "http://[::1]x/",
	"http://127.1/", "http://xn--bcher-kva.example/", "http://a_b.internal/", "http://a b/",
}

func TestParseTarget(t *testing.T) {
	ok := []struct {
		id, raw, method         string
		authority, host, origin string
		absolute                string
		port                    int
	}{
		{"HTTP-1/absolute-form-passes-through", "http://127.0.0.1:8080/a%2Fb|c?q", "GET", "127.0.0.1:8080", "127.0.0.1", "/a%2Fb|c?q", "http://127.0.0.1:8080/a%2Fb|c?q", 8080},
		{"ORD-3/host-lowercased-trailing-dot-stripped", "HTTP://Example.COM./x", "GET", "Example.COM.", "example.com", "/x", "http://Example.COM./x", 80},
		{"ORD-3/ipv6-literal-brackets-stripped", "http://[0:0::1]:81/", "GET", "[0:0::1]:81", "::1", "/", "http://[0:0::1]:81/", 81},
		{"ORD-3/ipv6-zone-decoded-not-routed", "http://[fe80::1%25eth0]/", "GET", "[fe80::1%eth0]", "fe80::1", "/", "http://[fe80::1%eth0]/", 80},
		{"ORD-3/escaped-idn-host-to-punycode", "http://b%C3%BCcher.example/", "GET", "bücher.example", "xn--bcher-kva.example", "/", "http://bücher.example/", 80},
		{"HTTP-1/empty-path-is-slash", "http://example.com", "GET", "example.com", "example.com", "/", "http://example.com/", 80},
		{"HTTP-1/query-without-path", "http://example.com?x=1", "GET", "example.com", "example.com", "/?x=1", "http://example.com/?x=1", 80},
		{"HTTP-1/options-asterisk", "http://example.com:8080", "OPTIONS", "example.com:8080", "example.com", "*", "http://example.com:8080", 8080},
		{"HTTP-1/empty-port-is-80", "http://example.com:/", "GET", "example.com:", "example.com", "/", "http://example.com:/", 80},
		{"HTTP-1/fragment-stripped", "http://example.com/p?q#frag", "GET", "example.com", "example.com", "/p?q", "http://example.com/p?q", 80},
		// The url.Parse parser took "/y" out of the fragment.
		{"HTTP-1/fragment-before-path-stripped", "http://example.com#x/y", "GET", "example.com", "example.com", "/", "http://example.com/", 80},
		{"HTTP-1/bad-escape-in-fragment-ignored", "http://example.com/#%zz", "GET", "example.com", "example.com", "/", "http://example.com/", 80},
	}
	for _, c := range ok {
		t.Run(c.id, func(t *testing.T) {
			got, err := parseTarget(c.raw, c.method)
			if err != nil {
				t.Fatalf("parseTarget(%q): %v", c.raw, err)
			}
			want := target{authority: c.authority, host: c.host, port: c.port, origin: c.origin, absolute: c.absolute}
			if *got != want {
				t.Fatalf("parseTarget(%q) = %+v, want %+v", c.raw, *got, want)
			}
		})
	}
	bad := []struct{ id, raw, msg string }{
		{"HTTP-1/userinfo-refused", "http://user:pw@example.com/", "absolute-form http:// target required"},
		{"HTTP-1/empty-userinfo-refused", "http://@example.com/", "absolute-form http:// target required"},
		{"HTTP-1/https-needs-connect", "https://example.com/", "https:// targets must use CONNECT"},
		{"HTTP-1/origin-form-not-forwarded", "/p", "absolute-form http:// target required"},
		{"HTTP-1/other-scheme", "ftp://example.com/", "absolute-form http:// target required"},
		{"HTTP-1/no-authority", "http:///p", "absolute-form http:// target required"},
		{"HTTP-1/port-zero", "http://example.com:0/", "bad port"},
		{"HTTP-1/port-too-big", "http://example.com:65536/", "bad port"},
		{"HTTP-1/two-colons", "http://a:1:2/", "absolute-form http:// target required"},
		{"HTTP-1/ipv4-in-brackets", "http://[1.2.3.4]/", "absolute-form http:// target required"},
		{"HTTP-1/unclosed-bracket", "http://[::1/", "absolute-form http:// target required"},
		{"HTTP-1/escaped-ascii-in-host", "http://%41.com/", "absolute-form http:// target required"},
		{"HTTP-1/bad-escape-in-path", "http://a/%zz", "absolute-form http:// target required"},
		{"HTTP-1/control-character", "http://a/\x01", "absolute-form http:// target required"},
		{"ORD-3/numeric-last-label-refused", "http://127.1/", "bad host"},
		{"ORD-3/bad-host-character", "http://a!b/", "bad host"},
	}
	for _, c := range bad {
		t.Run(c.id, func(t *testing.T) {
			if got, err := parseTarget(c.raw, "GET"); err == nil || err.Error() != c.msg {
				t.Fatalf("parseTarget(%q) = %+v, %v; want error %q", c.raw, got, err, c.msg)
			}
		})
	}
}

// FuzzParseTarget checks the byte parser against the url.Parse based one
// (SPEC HTTP-1, ORD-3): the same targets are accepted, with the same
// fields. By design the byte parser cuts the fragment first (never
// forwarded, never checked), so the reference sees the target without it;
// and it tells any "https:" target to use CONNECT, where the reference
// said so only for targets net/url accepted.
func FuzzParseTarget(f *testing.F) {
	for _, s := range targetSeeds {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, options bool) {
		method := "GET"
		if options {
			method = http.MethodOptions
		}
		got, err := parseTarget(raw, method)
		ref := raw
		if i := strings.IndexByte(ref, '#'); i >= 0 {
			ref = ref[:i]
		}
		want, werr := parseTargetURL(ref, method)
		if (err == nil) != (werr == nil) {
			t.Fatalf("parseTarget(%q) error %v, reference %v", raw, err, werr)
		}
		if err != nil {
			if err.Error() != werr.Error() && !errors.Is(err, errHTTPS) {
				t.Fatalf("parseTarget(%q) error %q, reference %q", raw, err, werr)
			}
			return
		}
		if *got != *want {
			t.Fatalf("parseTarget(%q) = %+v, reference %+v", raw, *got, *want)
		}
	})
}

// FuzzParseTargetReused checks the authority memo of a connection's
// target (SPEC HTTP-1, ORD-3): parsing raw into a target that parsed prev
// before gives what parsing raw alone gives, whether or not the two name
// the same authority, and an error leaves the target as it was.
func FuzzParseTargetReused(f *testing.F) {
	for _, s := range targetSeeds {
		f.Add("http://example.com/", s)
		f.Add(s, s)
	}
	f.Add("http://Example.COM:8080/a", "http://Example.COM:8080/%zz")
	f.Add("http://a%C3%BC.example:81/", "http://a%C3%BC.example:81?q")
	f.Fuzz(func(t *testing.T, prev, raw string) {
		var tg target
		tg.parse(prev, "GET")
		before := tg
		err := tg.parse(raw, "GET")
		want, werr := parseTarget(raw, "GET")
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("after %q: parse(%q) error %v, alone %v", prev, raw, err, werr)
		}
		if err != nil {
			if tg != before {
				t.Fatalf("after %q: failed parse(%q) changed the target", prev, raw)
			}
			return
		}
		got := tg
		got.memo = authMemo{}
		if got != *want {
			t.Fatalf("after %q: parse(%q) = %+v, alone %+v", prev, raw, got, *want)
		}
		// The memo names what it was made from.
		if m := tg.memo; m.raw == "" || m.host != got.host || m.port != got.port || m.decoded != got.authority {
			t.Fatalf("memo %+v for %+v", m, got)
		}
	})
}

func BenchmarkParseTarget(b *testing.B) {
	for _, raw := range []string{"http://127.0.0.1:8080/", "http://api.example.test/v1/messages?beta=true"} {
		b.Run(raw[7:min(len(raw), 22)], func(b *testing.B) {
			b.ReportAllocs()
			testkit.ReportCPU(b)
			for i := 0; i < b.N; i++ {
				if _, err := parseTarget(raw, "GET"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSelfTargetSpellings: every spelling of the proxy's own listener in an
// absolute-form target is served by the proxy itself (SPEC HTTP-1), or, for
// names the self check does not know as loopback, refused as a loop (508,
// Via) — never forwarded on. A parse-free port filter stands in front
// of the check; FuzzTargetPort holds the filter to url.Parse. Another
// loopback address on the port ([::1], 127.0.0.2 for this 127.0.0.1
// listener) is an origin of its own: TestSelfTargetOnlyOwnAddress.
func TestSelfTargetSpellings(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "own:"+r.URL.RequestURI()) })
	addr, _ := proxytest.Start(t, New, Config{Handler: h, LoopbackDirect: true})
	_, port, _ := net.SplitHostPort(addr)
	for _, tc := range []struct {
		target string
		served bool // else a loop refusal is also right
	}{
		{"http://127.0.0.1:" + port + "/s", true},
		{"HTTP://LOCALHOST:" + port + "/s", true},
		{"http://localhost:" + port + "?q", true},
		{"http://[::ffff:127.0.0.1]:" + port + "/s", true},
		{"http://user:pw@127.0.0.1:" + port + "/s", true},
		{"http://127.0.0.1:0" + port + "/s", true},
		{"http://a.localhost:" + port + "/s", true},
		{"http://127.0.0.1:" + port + "#frag", true},
		{"http://localhost.:" + port + "/s", false},
		{"http://0.0.0.0:" + port + "/s", false},
	} {
		t.Run("HTTP-1/"+tc.target, func(t *testing.T) {
			c := proxytest.Dial(t, addr)
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", tc.target)
			resp, body := proxytest.ReadResponse(t, bufio.NewReader(c), "GET")
			switch {
			case resp.StatusCode == 200 && len(body) > 4 && body[:4] == "own:":
			case !tc.served && resp.StatusCode == http.StatusLoopDetected:
			default:
				t.Fatalf("got %d %q: neither served nor refused as a loop", resp.StatusCode, body)
			}
		})
	}
}
