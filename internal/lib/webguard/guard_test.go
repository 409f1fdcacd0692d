package webguard_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/lib/webguard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		host    string
		hdr     []string
		guarded bool
		refused bool
	}{
		{"POOL-20/agent-without-browser-headers", "127.0.0.1:7896", nil, true, false},
		{"POOL-20/localhost-names", "app.localhost.", nil, true, false},
		{"POOL-20/ipv6-literal", "[::1]:7896", nil, true, false},
		{"POOL-20/rebound-name-refused-unguarded-too", "evil.example:7896", nil, false, true},
		{"POOL-20/empty-host", "", nil, false, true},
		{"OPS-7/port-not-digits", "127.0.0.1:7896.evil.example", nil, false, true},
		{"OPS-7/port-with-sign", "127.0.0.1:+7896", nil, false, true},
		{"OPS-7/port-out-of-range", "127.0.0.1:65536", nil, false, true},
		{"OPS-7/ipv6-port-not-digits", "[::1]:7896.evil.example", nil, false, true},
		{"OPS-7/ipv6-junk-after-bracket", "[::1]x", nil, false, true},
		{"OPS-7/localhost-port-not-digits", "localhost:7896.evil.example", nil, false, true},
		{"OPS-7/foreign-origin", "127.0.0.1:7896", []string{"Origin", "https://evil.example"}, true, true},
		{"OPS-7/null-origin", "127.0.0.1:7896", []string{"Origin", "null"}, true, true},
		{"OPS-7/origin-with-path", "127.0.0.1:7896", []string{"Origin", "http://127.0.0.1:7896/x"}, true, true},
		{"OPS-7/loopback-origin-any-port", "127.0.0.1:7896", []string{"Origin", "http://localhost:3000"}, true, false},
		{"OPS-7/same-origin", "10.0.0.5:7896", []string{"Origin", "http://10.0.0.5:7896"}, true, false},
		{"OPS-7/cross-site-fetch", "127.0.0.1:7896", []string{"Sec-Fetch-Site", "cross-site"}, true, true},
		{"OPS-7/same-site-fetch", "127.0.0.1:7896", []string{"Sec-Fetch-Site", "Same-Site"}, true, true},
		{"OPS-7/same-origin-fetch", "127.0.0.1:7896", []string{"Sec-Fetch-Site", "same-origin"}, true, false},
		{"OPS-7/unguarded-ignores-origin", "127.0.0.1:7896", []string{"Origin", "https://evil.example"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPut, "http://x/", nil)
			r.Host = tc.host
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				r.Header.Set(tc.hdr[i], tc.hdr[i+1])
			}
			if why := webguard.Refusal(r, tc.guarded); (why != "") != tc.refused {
				t.Fatalf("Refusal = %q, want refused %v", why, tc.refused)
			}
		})
	}
	t.Run("POOL-20/two-origin-headers", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodPut, "http://127.0.0.1/", nil)
		r.Header["Origin"] = []string{"http://127.0.0.1", "http://127.0.0.1"}
		if webguard.Refusal(r, true) == "" {
			t.Fatal("two Origin fields must be refused")
		}
	})
}

// TestListenerHost sends requests to a real listener: the Host's port must
// be the port the request arrived on (a page of another local port, or a
// name that only starts like an address, is refused).
func TestListenerHost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if why := webguard.Refusal(r, false); why != "" {
			http.Error(w, why, http.StatusForbidden)
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	n, _ := strconv.Atoi(port)
	other := strconv.Itoa(n%65535 + 1)
	for _, tc := range []struct {
		name    string
		host    string
		refused bool
	}{
		{"OPS-7/listener-port", "127.0.0.1:" + port, false},
		{"OPS-7/listener-port-localhost", "localhost:" + port, false},
		{"OPS-7/another-port", "127.0.0.1:" + other, true},
		{"OPS-7/port-then-name", "127.0.0.1:" + port + ".evil.example", true},
		{"OPS-7/no-port", "127.0.0.1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			req.Host = tc.host
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if (resp.StatusCode == http.StatusForbidden) != tc.refused {
				t.Fatalf("Host %q: status %d, want refused %v", tc.host, resp.StatusCode, tc.refused)
			}
		})
	}
}
