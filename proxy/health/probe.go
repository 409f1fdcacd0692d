package health

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/dial"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/upstream"
)

// ResponseTimeout is the response timeout of the https:// check's client;
// the check's own deadline (Settings.ConnectTimeout, the whole check) is
// always shorter in practice and governs.
const ResponseTimeout = 10 * time.Second

// UserAgent is the User-Agent of every health check request.
const UserAgent = "dual-proxy-health/1"

// Prober makes one health check: GET the health URL through a
// candidate; the candidate is alive when an origin answered with a status
// below 500. Its fields are set once and not changed while it is in use.
type Prober struct {
	// Client sends an http:// check: absolute-form with
	// Proxy-Authorization to an http or https gateway, origin-form to the
	// origin on direct or SOCKS5. The engine's plain
	// forwarding client; a check's connection is closed after it.
	Client *upstream.Client
	// Dialer opens the tunnel of an https:// check to the origin (CONNECT
	// through a gateway, SOCKS5, or direct).
	Dialer *dial.Dialer
	// TLS is the base TLS configuration of an https:// check (nil: the
	// system roots); ServerName is set per check.
	TLS *tls.Config
	// GatewayFailure reports an answer an http or https gateway made
	// itself (407, its own error pages); such an answer never
	// counts as alive. nil: only the status decides.
	GatewayFailure func(c candidate.Candidate, status int, server string) bool
}

// Check sends GET s.URL through c and reports whether an origin answered
// with a status below 500. Answers a gateway makes itself
// never count: 407, a non-2xx answer to CONNECT, and its own 5xx pages
// (which fail the < 500 test anyway). No origin credentials are sent. The
// whole check — opening the path, TLS, and the wait for the status line —
// ends within s.ConnectTimeout (--timeout-ms), so a silent gateway (one
// that accepts TCP and never answers) costs a check no more than that and
// the verdict is in before a slow origin would matter. local is
// true when the check could not be made because this machine ran out of
// descriptors or memory (the result then says nothing about c). A failed
// check's Reason is the dial error, "response: …", "no answer within N ms",
// "gateway answered N" or "status N".
//
// The request is one exchange on a fresh connection that closes after it
// (upstream.Request.Close); an https:// URL goes through a client whose
// dial opens a tunnel through c and runs TLS to the origin over it.
func (p *Prober) Check(ctx context.Context, s Settings, c candidate.Candidate) (_ route.HealthResult, local bool) {
	u := s.URL
	res := route.HealthResult{Key: c.Key()}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.ConnectTimeout)
	defer cancel()
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	r := &upstream.Request{Method: http.MethodGet, Origin: u.RequestURI(), Absolute: u.Scheme + "://" + u.Host + u.RequestURI(),
		Authority: u.Host, Addr: net.JoinHostPort(u.Hostname(), port),
		Header: []httpmsg.Field{{Name: "User-Agent", Value: UserAgent}},
		// The context bounds the whole check, as the response wait.
		ResponseTimeout: -1, Close: true}
	client, wire := p.Client, c
	if u.Scheme == "https" {
		// The TLS connection leads to the origin itself: the request is
		// written as to an origin (origin-form, no Proxy-Authorization),
		// which is what candidate.Direct stands for on the wire.
		client, wire = p.tlsClient(c, u.Hostname()), candidate.Direct
	}
	sent := client.Send(ctx, wire, r, nil, s.ConnectTimeout, false)
	if sent.Err != nil && parent.Err() == nil && timedOut(ctx, sent.Err) {
		// The check's deadline (or the dial's, the same length), not the
		// caller's cancel: nothing answered in time (a silent gateway or
		// origin).
		res.Reason = "no answer within " + strconv.FormatInt(s.ConnectTimeout.Milliseconds(), 10) + " ms"
		return res, false
	}
	if sent.Err != nil {
		if !sent.Connected {
			res.Reason = sent.Err.Error()
			return res, netutil.IsLocalResource(sent.Err)
		}
		res.Reason = "response: " + sent.Err.Error()
		return res, false
	}
	resp := sent.Resp
	resp.Body.Close()
	switch {
	case wire.SpeaksHTTP() && p.GatewayFailure != nil && p.GatewayFailure(c, resp.StatusCode, resp.Get("Server")):
		res.Reason = "gateway answered " + strconv.Itoa(resp.StatusCode)
	case resp.StatusCode >= 500:
		res.Reason = "status " + strconv.Itoa(resp.StatusCode)
	default:
		res.Alive = true
	}
	return res, false
}

// tlsClient is the upstream client of one https:// check through c: its
// dial opens a tunnel to the origin (dial.Open) and runs TLS to host over
// it, both within the check's connect timeout; a handshake failure is
// "tls handshake: …". Its requests close their connection, so its idle pool stays
// empty.
func (p *Prober) tlsClient(c candidate.Candidate, host string) *upstream.Client {
	return &upstream.Client{ResponseTimeout: ResponseTimeout,
		Dial: func(ctx context.Context, _ candidate.Candidate, addr string) (net.Conn, error) {
			conn, err := p.Dialer.Open(ctx, c, addr)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(conn, p.tlsConfig(host))
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, fmt.Errorf("tls handshake: %w", err)
			}
			return tc, nil
		}}
}

// tlsConfig is the TLS configuration of an https:// check to host.
func (p *Prober) tlsConfig(host string) *tls.Config {
	var c *tls.Config
	if p.TLS != nil {
		c = p.TLS.Clone()
	} else {
		c = &tls.Config{}
	}
	c.ServerName = host
	return c
}

// timedOut reports whether a check failed on its deadline: ctx's passed,
// or err is a network timeout (the dial's deadline, set to the same
// length).
func timedOut(ctx context.Context, err error) bool {
	var ne net.Error
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
