package proxy

import (
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// TestGatewayHandshakeFaults: gateways of the new kinds that stall or lie in the
// middle of their handshake cost one connect timeout and a failover, never
// a hang (SPEC GW-6, GW-7, ORD-5). The connect timeout is 400 ms; every
// bound asserted is 4 s, far below the default 5 s connect timeout that
// would show the per-attempt bound was not applied.
func TestGatewayHandshakeFaults(t *testing.T) {
	ca := testworld.NewCA(t, "hostile CA")
	leaf := ca.Leaf(t, "127.0.0.1")
	trust := &tls.Config{RootCAs: ca.Pool}
	const bound = 4 * time.Second
	discard := func(c net.Conn) { io.Copy(io.Discard, c) }
	socksThen := func(answer []byte, then func(net.Conn)) func(net.Conn) {
		return func(c net.Conn) {
			var g [3]byte
			if _, err := io.ReadFull(c, g[:]); err != nil {
				return
			}
			c.Write([]byte{5, 0})
			var req [4]byte
			if _, err := io.ReadFull(c, req[:]); err != nil {
				return
			}
			c.Write(answer)
			then(c)
		}
	}
	huge := append([]byte{5, 0, 0, 3, 255}, strings.Repeat("a", 100)...) // 255-byte name announced, 100 sent
	for _, tc := range []struct {
		name, scheme string
		serve        func(net.Conn)
		phase        string
	}{
		{"GW-6/tls-gateway-silent-after-client-hello", "https", discard, "gateway-tls gateway"},
		{"GW-6/tls-gateway-stalls-after-handshake-before-connect-answer", "https", func(c net.Conn) {
			tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{leaf}})
			if tc.Handshake() == nil {
				io.Copy(io.Discard, tc)
			}
		}, "connect-response gateway"},
		{"GW-6/tls-gateway-answers-garbage-handshake", "https", func(c net.Conn) {
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
			io.Copy(io.Discard, c)
		}, "gateway-tls gateway"},
		{"GW-7/socks-gateway-silent-after-greeting", "socks5h", func(c net.Conn) {
			var g [3]byte
			io.ReadFull(c, g[:])
			io.Copy(io.Discard, c)
		}, "socks-handshake gateway"},
		{"GW-7/socks-gateway-silent-after-connect-request", "socks5h", socksThen(nil, discard), "connect-response gateway"},
		{"GW-7/huge-domain-length-then-stall-is-gateway-failure", "socks5h", socksThen(huge, discard), "connect-response gateway"},
		{"GW-7/truncated-reply-then-close-is-gateway-failure", "socks5h", socksThen([]byte{5, 0, 0, 4, 1, 2, 3}, func(net.Conn) {}), "connect-response gateway"},
	} {
		for _, mode := range []string{"tunnel", "plain"} {
			if mode == "plain" && strings.Contains(tc.name, "after-handshake") {
				continue // a plain request was written: its wait is the response timeout (HTTP-4), as for http://
			}
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				origin := testworld.NewOrigin(t)
				bad := proxytest.Gateway(t, tc.scheme+"://"+proxytest.TCPServer(t, "127.0.0.1:0", tc.serve))
				good := testworld.NewGateway(t)
				addr, srv := proxytest.Start(t, New, Config{Candidates: []candidate.Candidate{bad, proxytest.Gateway(t, good.URL)},
					GatewayTLS: trust, ConnectTimeout: 400 * time.Millisecond})
				e := srv.Engine()
				start := time.Now()
				if mode == "tunnel" {
					if body := proxytest.TunnelGet(t, addr, origin.Addr); body != origin.Greeting() {
						t.Fatalf("tunnel body %q", body)
					}
				} else if resp, body, err := proxytest.Get(t, addr, origin.URL+"/plain", ""); err != nil || resp.StatusCode != 200 || body != origin.Greeting() {
					t.Fatalf("GET %d %q %v", resp.StatusCode, body, err)
				}
				if d := time.Since(start); d > bound {
					t.Fatalf("took %v, want < %v", d, bound)
				}
				if f := proxytest.LastFailure(t, e, bad.Key()); f != tc.phase {
					t.Fatalf("failure %q, want %q", f, tc.phase)
				}
			})
		}
	}
}
