package testworld

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// modeKind enumerates the gateway behaviours.
type modeKind int

const (
	kindPass modeKind = iota
	kindBlackhole
	kindReset
	kindResetAfterSend
	kindStatus
	kindDelay
	kindSOCKSReply
)

// Mode is how a Gateway treats the next request head it reads. Switch it at
// any time with SetMode; a connection already relaying a tunnel is not
// affected.
type Mode struct {
	kind   modeKind
	status int
	delay  time.Duration
}

var (
	// ModePass forwards: CONNECT gets a tunnel, absolute-form requests are
	// sent to the origin and the answer relayed.
	ModePass = Mode{kind: kindPass}
	// ModeBlackhole accepts TCP and never answers; it reads and discards
	// whatever the client sends (a "silent gateway", which racing must
	// get past).
	ModeBlackhole = Mode{kind: kindBlackhole}
	// ModeReset reads the request head, then closes with RST (SO_LINGER 0):
	// "connection reset before the response".
	ModeReset = Mode{kind: kindReset}
	// ModeResetAfterSend, for plain HTTP, forwards the whole request to the
	// origin, waits for the origin's response head, then resets the client
	// without answering: the request was delivered (for the replay
	// tests). For CONNECT it answers 200, relays the client's first bytes to
	// the target, then resets the client.
	ModeResetAfterSend = Mode{kind: kindResetAfterSend}
)

// ModeStatus answers every CONNECT and request with code (403, 407, 502,
// 503…), a short text body naming the gateway, and "Connection: close".
// For 407 a Proxy-Authenticate header is added.
func ModeStatus(code int) Mode { return Mode{kind: kindStatus, status: code} }

// ModeDelay waits d before writing the response head, then behaves as
// ModePass. For plain HTTP the request reaches the origin at once; only the
// answer is held. For CONNECT the target is dialled first, the 200 held.
func ModeDelay(d time.Duration) Mode { return Mode{kind: kindDelay, delay: d} }

// String names the mode ("pass", "status 503", "delay 2s").
func (m Mode) String() string {
	switch m.kind {
	case kindBlackhole:
		return "blackhole"
	case kindReset:
		return "reset"
	case kindResetAfterSend:
		return "reset-after-send"
	case kindStatus:
		return fmt.Sprintf("status %d", m.status)
	case kindDelay:
		return "delay " + m.delay.String()
	case kindSOCKSReply:
		return fmt.Sprintf("socks reply 0x%02x", m.status)
	}
	return "pass"
}

// GatewayOption configures NewGateway.
type GatewayOption func(*Gateway)

// WithAuth requires "Proxy-Authorization: Basic base64(user:pass)"
// (RFC 7617); a missing or wrong value gets 407 with
// "Proxy-Authenticate: Basic realm=…" and the connection is closed.
//
// On a WithSOCKS5 gateway it requires RFC 1929 username/password instead:
// a client offering no USERNAME/PASSWORD method gets "no acceptable
// methods", a wrong pair status 1, and the connection is closed.
func WithAuth(user, pass string) GatewayOption {
	return func(g *Gateway) {
		g.wantAuth = "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
		g.user, g.pass = user, pass
	}
}

// WithTLS makes the gateway an https:// gateway: every accepted
// connection first runs a TLS server handshake with cert, then the HTTP
// proxy (or SOCKS5) protocol inside. URL and AuthURL start with https://.
// Handshakes that fail are counted (TLSFailures) and the connection is
// closed without reading anything else.
func WithTLS(cert tls.Certificate) GatewayOption {
	return func(g *Gateway) {
		g.tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
}

// WithSOCKS5 makes the gateway a SOCKS5 gateway (RFC 1928)
// instead of an HTTP proxy: CONNECT with any address type, relayed like an
// HTTP CONNECT tunnel. URL and AuthURL start with socks5h://. Modes:
// ModePass, ModeBlackhole (silent after accept), ModeReset (RST after the
// greeting), ModeDelay (the reply held), ModeStatus (an HTTP error page
// instead of a SOCKS answer: garbage), ModeSOCKSReply (a failure reply).
func WithSOCKS5() GatewayOption { return func(g *Gateway) { g.socks = true } }

// WithRoute makes the gateway dial addr (a loopback "IP:port") whenever a
// client asks for target ("host:port", matched case-insensitively), so tests
// can use names like "api.example.com:443" without any DNS. Without a route
// the gateway dials only loopback IP literals and "localhost"; other
// targets get 502 (SPEC "Test safety").
func WithRoute(target, addr string) GatewayOption {
	return func(g *Gateway) {
		if g.routes == nil {
			g.routes = map[string]string{}
		}
		g.routes[strings.ToLower(target)] = addr
	}
}

// WithName sets the name shown in status bodies and in the
// X-Testworld-Gateway header of forwarded plain-HTTP answers.
func WithName(name string) GatewayOption { return func(g *Gateway) { g.Name = name } }

// Gateway is an HTTP/1.1 forward proxy on 127.0.0.1 written on raw net.Conn
// (not net/http's server), so it can misbehave at byte level. It handles
// CONNECT (RFC 9110 §9.3.6) and absolute-form plain requests, removing
// hop-by-hop fields (RFC 9110 §7.6.1). The client side is keep-alive; each
// plain request uses a fresh origin connection.
type Gateway struct {
	// Addr is "127.0.0.1:PORT".
	Addr string
	// URL is "http://127.0.0.1:PORT", without credentials.
	URL string
	// AuthURL is "http://user:pass@127.0.0.1:PORT" with WithAuth, else URL.
	AuthURL string
	// Name defaults to Addr.
	Name string

	ln            net.Listener
	wantAuth      string
	user, pass    string
	tlsConf       *tls.Config
	socks         bool
	routes        map[string]string
	onHead        func(GatewayHead)
	refusedStatus int
	mode          atomic.Pointer[Mode]
	ctx           context.Context // cancelled by Close
	cancel        context.CancelFunc

	connects, requests, accepted atomic.Int64
	tlsFailures, appBytes        atomic.Int64

	mu        sync.Mutex
	conns     map[net.Conn]struct{}
	closed    bool
	lastAuth  string
	targets   []string
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// NewGateway starts a gateway in ModePass. It is closed by t.Cleanup.
func NewGateway(t testing.TB, opts ...GatewayOption) *Gateway {
	t.Helper()
	g, err := ListenGateway("127.0.0.1:0", opts...)
	if err != nil {
		t.Fatalf("testworld: gateway listen: %v", err)
	}
	t.Cleanup(g.Close)
	return g
}

// SetMode switches the behaviour for request heads read from now on.
func (g *Gateway) SetMode(m Mode) { g.mode.Store(&m) }

// Mode returns the current mode.
func (g *Gateway) Mode() Mode { return *g.mode.Load() }

// TLSFailures is the number of TLS server handshakes that failed
// (WithTLS): the client rejected the certificate, or spoke no TLS.
func (g *Gateway) TLSFailures() int { return int(g.tlsFailures.Load()) }

// AppBytes is the number of bytes read from clients after the TLS
// handshake (WithTLS) or, without TLS, from the accepted connections: a
// gateway whose certificate was rejected must show 0 (no request byte
// may reach a gateway that failed verification).
func (g *Gateway) AppBytes() int { return int(g.appBytes.Load()) }

// Connects is the number of CONNECT request heads read (SOCKS5 CONNECT
// requests with WithSOCKS5).
func (g *Gateway) Connects() int { return int(g.connects.Load()) }

// Requests is the number of plain (non-CONNECT) request heads read.
func (g *Gateway) Requests() int { return int(g.requests.Load()) }

// Accepted is the number of TCP connections accepted.
func (g *Gateway) Accepted() int { return int(g.accepted.Load()) }

// LastProxyAuthorization is the Proxy-Authorization value of the last
// request head read ("" when it had none).
func (g *Gateway) LastProxyAuthorization() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lastAuth
}

// Targets lists the "host:port" of every CONNECT and plain request read,
// in order.
func (g *Gateway) Targets() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.targets...)
}

// Close closes the listener and every open connection (client and origin
// side, tunnels included) and waits for all of the gateway's goroutines.
// Calling it again is a no-op.
func (g *Gateway) Close() {
	g.closeOnce.Do(func() {
		g.cancel()
		g.ln.Close()
		g.mu.Lock()
		g.closed = true
		for c := range g.conns {
			c.Close()
		}
		g.mu.Unlock()
		g.wg.Wait()
	})
}

// track registers c so Close closes it; it reports false (and closes c)
// when the gateway is already closed.
func (g *Gateway) track(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		c.Close()
		return false
	}
	g.conns[c] = struct{}{}
	return true
}

func (g *Gateway) untrack(c net.Conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
	c.Close()
}

func (g *Gateway) acceptLoop() {
	defer g.wg.Done()
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return // listener closed
		}
		g.accepted.Add(1)
		if !g.track(c) {
			return
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			defer g.untrack(c)
			g.serveConn(c)
		}()
	}
}

// goTracked runs f as a goroutine Close waits for; call it only from a
// goroutine Close already waits for, so the WaitGroup never restarts from 0.
func (g *Gateway) goTracked(f func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		f()
	}()
}
