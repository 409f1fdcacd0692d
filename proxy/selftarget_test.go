package proxy

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
)

// httpOriginOn starts a minimal HTTP origin on addr answering every request
// "origin <request line>" and closing, or skips when addr cannot be bound
// (no such loopback address on this machine, or the port is taken).
func httpOriginOn(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("listen %s: %v", addr, err)
	}
	ln.Close()
	proxytest.TCPServer(t, addr, func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		body := "origin " + strings.TrimSpace(line)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	})
}

// A target naming another loopback address on the proxy's port is that
// address's origin, not the proxy: a 127.0.0.1 listener does not answer
// for 127.0.0.2 or ::1 (SPEC HTTP-1), while its own address and localhost
// still are the proxy.
func TestSelfTargetOnlyOwnAddress(t *testing.T) {
	addr, _ := proxytest.Start(t, New, Config{Handler: ownHandler(nil, nil), LoopbackDirect: true})
	_, port, _ := net.SplitHostPort(addr)
	for _, tc := range []struct{ name, host string }{
		{"HTTP-1/other-v4-loopback-same-port-forwarded", "127.0.0.2"},
		{"HTTP-1/v6-loopback-same-port-forwarded", "[::1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			httpOriginOn(t, net.JoinHostPort(strings.Trim(tc.host, "[]"), port))
			for _, path := range []string{"/", "/_dual-proxy/status"} {
				rc := newRawClient(t, addr)
				target := "http://" + tc.host + ":" + port + path
				rc.send("GET " + target + " HTTP/1.1\r\nHost: " + tc.host + ":" + port + "\r\n\r\n")
				resp, body := proxytest.ReadResponse(t, rc.br, "GET")
				if resp.StatusCode != 200 || body != "origin GET "+path+" HTTP/1.1" {
					t.Fatalf("GET %s: %d %q, want the origin's answer", target, resp.StatusCode, body)
				}
			}
		})
	}
	for _, tc := range []struct{ name, host string }{
		{"HTTP-1/own-address-served-locally", "127.0.0.1"},
		{"HTTP-1/localhost-served-locally", "localhost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := newRawClient(t, addr)
			rc.send("GET http://" + tc.host + ":" + port + "/own HTTP/1.1\r\nHost: x\r\n\r\n")
			rc.expect("GET", 200, "own GET")
		})
	}
}

// namesListener: the bound address names the listener; a wildcard listener
// is named by loopback and interface addresses of its family (SPEC HTTP-1).
func TestNamesListener(t *testing.T) {
	for _, tc := range []struct {
		host, bound string
		want        bool
	}{
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.2", "127.0.0.1", false},
		{"::1", "127.0.0.1", false},
		{"localhost", "127.0.0.1", true},
		{"app.localhost", "::1", true},
		{"localhost", "127.0.0.2", false},
		{"::1", "::1", true},
		{"127.0.0.1", "::1", false},
		{"127.0.0.2", "0.0.0.0", true},
		{"::1", "0.0.0.0", false},
		{"::1", "::", true},
		{"127.0.0.1", "::", true},
		{"localhost", "::", true},
		{"example.com", "0.0.0.0", false},
		{"192.0.2.1", "0.0.0.0", false},
	} {
		t.Run("HTTP-1/"+tc.host+"-on-"+tc.bound, func(t *testing.T) {
			if got := namesListener(tc.host, net.ParseIP(tc.bound)); got != tc.want {
				t.Fatalf("namesListener(%q, %s) = %v, want %v", tc.host, tc.bound, got, tc.want)
			}
		})
	}
}
