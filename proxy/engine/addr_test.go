package engine

import "testing"

// TestRequestAddr: the dial address of a direct or SOCKS5 path is the
// target's normalized host and port, and the authority itself when the
// client already spelled it so. Each case's fields are what the front end
// fills from the absolute-form target named (proxy's parseTarget, which
// FuzzParseTarget holds to url.Parse).
func TestRequestAddr(t *testing.T) {
	for _, c := range []struct {
		raw       string // the target the fields come from
		authority string
		host      string
		port      int
		want      string
	}{
		{"http://127.0.0.1:8080/", "127.0.0.1:8080", "127.0.0.1", 8080, "127.0.0.1:8080"},
		{"http://example.com/", "example.com", "example.com", 80, "example.com:80"},
		{"http://Example.COM:81/", "Example.COM:81", "example.com", 81, "example.com:81"},
		{"http://example.com:081/", "example.com:081", "example.com", 81, "example.com:81"},
		{"http://example.com:/", "example.com:", "example.com", 80, "example.com:80"},
		{"http://[::1]:8080/", "[::1]:8080", "::1", 8080, "[::1]:8080"},
		{"http://[fe80::1%25eth0]/", "[fe80::1%25eth0]", "fe80::1", 80, "[fe80::1]:80"},
		// Atoi takes a sign; the dial address never does.
		{"http://example.com:+81/", "example.com:+81", "example.com", 81, "example.com:81"},
	} {
		t.Run("HTTP-1/dial-address/"+c.raw[7:], func(t *testing.T) {
			r := &Request{Authority: c.authority, Host: c.host, Port: c.port}
			if got := r.addr(); got != c.want {
				t.Fatalf("addr() = %q, want %q", got, c.want)
			}
		})
	}
}
