package testworld

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
)

// GatewayHead is one request head a gateway read (WithHeadLog).
type GatewayHead struct {
	// Method is the request method; CONNECT for a tunnel.
	Method string
	// Target is the request-target as sent: "host:port" for CONNECT, the
	// absolute URL of a plain request.
	Target string
	// UserAgent is the head's User-Agent ("" when it has none).
	UserAgent string
	// ProxyAuthorization reports whether the head carried a
	// Proxy-Authorization field.
	ProxyAuthorization bool
}

// WithHeadLog calls f with every request head an HTTP proxy gateway reads,
// before the gateway acts on it (mode, auth, dial). f may be called from
// several goroutines at once.
func WithHeadLog(f func(GatewayHead)) GatewayOption { return func(g *Gateway) { g.onHead = f } }

// WithRefusedStatus answers a target the gateway will not dial (no
// loopback IP literal, "localhost" or route: SPEC "Test safety") with code
// instead of 502, the way a gateway with an allow list refuses (403). Such
// a target is never dialled either way.
func WithRefusedStatus(code int) GatewayOption { return func(g *Gateway) { g.refusedStatus = code } }

// errRefusedTarget is the dial error of a target the gateway never dials.
var errRefusedTarget = errors.New("testworld: refusing non-loopback target (add WithRoute)")

// dialFailStatus is the status answering a dial that failed with err.
func (g *Gateway) dialFailStatus(err error) int {
	if errors.Is(err, errRefusedTarget) && g.refusedStatus != 0 {
		return g.refusedStatus
	}
	return http.StatusBadGateway
}

// ListenGateway starts a gateway in ModePass on addr ("127.0.0.1:0" for
// any free port), for a program that serves one outside a test
// (internal/testbed/testworld/cmd/gateway runs one inside another network
// namespace). The caller stops it with Close. Errors are the listen's.
func ListenGateway(addr string, opts ...GatewayOption) (*Gateway, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	g := &Gateway{ln: ln, Addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	g.Name = g.Addr
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.SetMode(ModePass)
	for _, o := range opts {
		o(g)
	}
	scheme := "http://"
	switch {
	case g.socks:
		scheme = "socks5h://"
	case g.tlsConf != nil:
		scheme = "https://"
	}
	g.URL, g.AuthURL = scheme+g.Addr, scheme+g.Addr
	if g.user != "" {
		g.AuthURL = scheme + url.UserPassword(g.user, g.pass).String() + "@" + g.Addr
	}
	g.wg.Add(1)
	go g.acceptLoop()
	return g, nil
}
