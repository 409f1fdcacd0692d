// Package dial opens paths to a destination through one candidate: a direct TCP
// connection; an http:// gateway's TCP connection, or an https:// gateway's
// verified TLS connection, followed by CONNECT (RFC 9110 §9.3.6) with optional
// Basic credentials; or a SOCKS5 gateway's CONNECT (RFC 1928, RFC 1929). Every
// failure is a *candidate.PathError carrying the phase and the cooldown tier.
//
// Which bytes go where, per kind:
//
//	kind      Open (tunnel)                      Forward (plain HTTP)
//	direct    TCP to target                      TCP to target, origin-form
//	http      TCP, CONNECT target                TCP to gateway, absolute-form
//	https     TCP, TLS (verified), CONNECT       TLS to gateway, absolute-form
//	socks5    resolve, TCP, SOCKS5 CONNECT addr  the tunnel, origin-form
//	socks5h   TCP, SOCKS5 CONNECT name           the tunnel, origin-form
package dial

import (
	"context"
	"crypto/tls"
	"net"
	"sync"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// Dialer opens paths through candidates. The zero value dials with the
// system defaults, the system resolver and system roots, and no timeout
// beyond the context's. Set the fields before the first use; Prepare loads
// per-gateway CA files. Safe for concurrent use.
type Dialer struct {
	// Net is the TCP dialer; its Timeout is ignored (use the context).
	// With its keepalive fields at Go's default, a connection to a
	// loopback peer gets no TCP keepalive and any other Go's default
	// probes (tcp).
	Net net.Dialer
	// Resolver resolves destination names for socks5:// gateways (we resolve); nil:
	// net.DefaultResolver.
	Resolver *net.Resolver
	// GatewayTLS is the base TLS configuration for https:// gateways
	// (tests set RootCAs); nil: system roots (on Linux Go also reads
	// SSL_CERT_FILE / SSL_CERT_DIR; macOS and Windows ignore them). ServerName is always the
	// gateway's host; a candidate's CAFile replaces RootCAs.
	GatewayTLS *tls.Config

	mu  sync.Mutex
	tls map[string]*tls.Config // per https gateway (Key), with its session cache

	quietOnce sync.Once
	quiet     net.Dialer // Net without keepalive, made once (tcp)
}

// Open returns a connection that reaches target ("host:port", IPv6
// bracketed) through c (see the package comment for each kind). Bytes the
// gateway sent after its CONNECT answer are returned first by the Conn's
// Read, so none of the tunnel's first bytes is lost. The context bounds the
// whole open (the connect timeout, SPEC ORD-5).
//
// Errors are *candidate.PathError: PhaseLocal (TierNone) when this machine ran
// out of descriptors or memory, else PhaseOriginConnect (direct dial, or a
// socks5:// destination name that does not resolve; TierHost),
// PhaseGatewayConnect (gateway dial, TierGateway), PhaseGatewayTLS (https
// gateway's TLS or certificate, TierGateway), PhaseSOCKSHandshake (SOCKS5
// method or credentials refused, garbage; TierGateway),
// PhaseConnectResponse (HTTP: garbage/close/407/401 TierGateway, other
// non-2xx TierHost with Status set; SOCKS5: a failure reply TierHost,
// except "command not supported", garbage or silence TierGateway).
func (d *Dialer) Open(ctx context.Context, c candidate.Candidate, target string) (net.Conn, error) {
	if c.Direct {
		conn, err := d.tcp(ctx, target)
		if err != nil {
			return nil, dialError(c, candidate.PhaseOriginConnect, candidate.TierHost, err)
		}
		return conn, nil
	}
	if c.IsSOCKS() {
		return d.openSOCKS(ctx, c, target)
	}
	conn, err := d.DialGateway(ctx, c)
	if err != nil {
		return nil, err
	}
	tc, err := Connect(ctx, conn, c, target)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// Forward returns a connection on which to write one plain HTTP request
// for target ("host:port" of an http:// origin) through c. With
// c.SpeaksHTTP() it is a connection to the gateway (TCP, or TLS for https)
// and the request goes in absolute-form; otherwise it reaches the origin
// (direct, or a SOCKS5 tunnel) and the request goes in origin-form. Errors
// as for Open; nothing of the request has been sent when Forward fails.
func (d *Dialer) Forward(ctx context.Context, c candidate.Candidate, target string) (net.Conn, error) {
	if c.SpeaksHTTP() {
		return d.DialGateway(ctx, c)
	}
	return d.Open(ctx, c, target)
}

// DialGateway opens a connection to the HTTP proxy c (http or https, not
// direct, not SOCKS5): TCP, and for https a TLS handshake verified against
// the gateway's host name (SPEC GW-6). Errors are *candidate.PathError with
// TierGateway: PhaseGatewayConnect (TCP) or PhaseGatewayTLS (TLS,
// certificate; no request byte has been written then); PhaseLocal and
// TierNone for this machine's resource errors.
func (d *Dialer) DialGateway(ctx context.Context, c candidate.Candidate) (net.Conn, error) {
	conn, err := d.tcp(ctx, c.Addr)
	if err != nil {
		return nil, dialError(c, candidate.PhaseGatewayConnect, candidate.TierGateway, err)
	}
	if c.Kind != candidate.KindHTTPS {
		return conn, nil
	}
	tc, err := d.handshake(ctx, c, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// tcp dials addr ("host:port") over TCP with d.Net. When d.Net leaves
// keepalive at Go's default (KeepAlive and KeepAliveConfig zero), the
// connection gets Go's default probes (15 s idle, 15 s interval, 9
// probes: the same SetKeepAliveConfig call Go's dialer makes) unless its
// peer is a loopback address, where it gets none: a loopback peer cannot
// vanish without its kernel ending the connection, so probes there detect
// nothing, and they cost every new tunnel to a loopback gateway or
// destination four setsockopt(2) calls (the listener does the
// same for loopback clients). The peer is the address
// connected to, so a name that resolves to loopback counts too. A d.Net
// with keepalive settings of its own dials as it says.
func (d *Dialer) tcp(ctx context.Context, addr string) (net.Conn, error) {
	if d.Net.KeepAlive != 0 || d.Net.KeepAliveConfig != (net.KeepAliveConfig{}) {
		return d.Net.DialContext(ctx, "tcp", addr)
	}
	d.quietOnce.Do(func() {
		d.quiet = d.Net
		d.quiet.KeepAlive = -1
	})
	conn, err := d.quiet.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok && !loopbackPeer(tc.RemoteAddr()) {
		// Errors ignored, as Go's dialer ignores them.
		tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true})
	}
	return conn, nil
}

// loopbackPeer reports whether a is a loopback TCP address (127.0.0.0/8,
// ::1, or either mapped into IPv6).
func loopbackPeer(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// dialError is the PathError of a failed dial: phase and tier, or
// PhaseLocal with TierNone when this machine ran out of descriptors,
// buffers or memory (never the candidate's fault).
func dialError(c candidate.Candidate, phase candidate.Phase, tier candidate.Tier, err error) error {
	if netutil.IsLocalResource(err) {
		phase, tier = candidate.PhaseLocal, candidate.TierNone
	}
	return &candidate.PathError{Candidate: c, Phase: phase, Tier: tier, Err: err}
}
