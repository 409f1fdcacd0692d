package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/dial"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// Engine is the candidate selection state shared by the server, the Dialer
// and the RoundTripper (SPEC OPS-4): candidate order, and per candidate an
// HTTP transport for plain requests. Create it with NewEngine.
type Engine struct {
	cfg    Config
	dialer dial.Dialer

	decisions decisionLog

	mu         sync.Mutex
	transports map[string]*http.Transport // by Candidate.Key()
}

// NewEngine validates cfg (see Config) and returns an engine.
func NewEngine(cfg Config) (*Engine, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, transports: map[string]*http.Transport{}}, nil
}

// order returns the candidates to try for host (normalized, no brackets), in
// order. Loopback destinations go direct only (SPEC GW-5).
func (e *Engine) order(host string) []route.Candidate {
	if e.cfg.LoopbackDirect && isLoopback(host) {
		return []route.Candidate{route.Direct}
	}
	return e.cfg.Candidates
}

// isLoopback reports whether host is localhost, 127.0.0.0/8 or ::1.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// attemptTimeout is the connect timeout for one attempt.
func (e *Engine) attemptTimeout() time.Duration { return e.cfg.ConnectTimeout }

// openPath opens a tunnel to target through candidate c within the connect
// timeout.
func (e *Engine) openPath(ctx context.Context, c route.Candidate, target string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, e.attemptTimeout())
	defer cancel()
	return e.dialer.Open(ctx, c, target)
}

// transport returns the HTTP transport for plain requests through c: direct
// to origins, or absolute-form to the gateway with its credentials (SPEC
// GW-4). Connections are pooled per candidate.
func (e *Engine) transport(c route.Candidate) *http.Transport {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.transports[c.Key()]; ok {
		return t
	}
	t := &http.Transport{
		DialContext:           e.dialContext,
		DisableCompression:    true, // pass bodies through untouched
		MaxIdleConns:          512,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: e.cfg.ResponseTimeout,
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	if !c.Direct {
		u := &url.URL{Scheme: "http", Host: c.Addr}
		if c.HasAuth {
			u.User = url.UserPassword(c.User, c.Password)
		}
		t.Proxy = http.ProxyURL(u)
	}
	e.transports[c.Key()] = t
	return t
}

// dialContext dials for the transports, bounded by the attempt's connect
// timeout.
func (e *Engine) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, e.attemptTimeout())
	defer cancel()
	return e.dialer.Net.DialContext(ctx, network, addr)
}

// closeIdle closes the idle upstream connections of every transport.
func (e *Engine) closeIdle() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range e.transports {
		t.CloseIdleConnections()
	}
}

// openTunnel opens a path to target for a CONNECT tunnel, trying the
// candidates for host in order; a failure moves to the next (SPEC CON-1).
// It returns the open connection and the candidate that served it, or an
// *AllFailedError.
func (e *Engine) openTunnel(ctx context.Context, host, target string) (net.Conn, route.Candidate, error) {
	var fails []error
	start := time.Now()
	for _, c := range e.order(host) {
		conn, err := e.openPath(ctx, c, target)
		if err == nil {
			e.cfg.Logger.Debug("tunnel open", "host", host, "candidate", c.String())
			e.decisions.add(Decision{Time: start, Kind: "connect", Host: host, Candidate: c.String(), Failed: failures(fails), LatencyMS: ms(time.Since(start))})
			return conn, c, nil
		}
		e.cfg.Logger.Info("path failed", logAttrs(host, err)...)
		fails = append(fails, err)
		if ctx.Err() != nil {
			break
		}
	}
	err := &AllFailedError{Host: host, Errs: fails}
	e.decisions.add(Decision{Time: start, Kind: "connect", Host: host, Failed: failures(fails), LatencyMS: ms(time.Since(start)), Error: "all candidates failed"})
	return nil, route.Candidate{}, err
}

// ms is d in milliseconds with microsecond resolution.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// AllFailedError is returned when no candidate could serve host (SPEC
// HTTP-6, CON-3). Its message lists each attempt with phase and redacted
// candidate.
type AllFailedError struct {
	Host string
	Errs []error
}

func (e *AllFailedError) Error() string {
	var b strings.Builder
	b.WriteString("all candidates failed for ")
	b.WriteString(e.Host)
	for i, err := range e.Errs {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

// logAttrs are the slog attributes of a path failure: host, candidate,
// phase, reason (never paths, headers or credentials; SPEC HTTP-6).
func logAttrs(host string, err error) []any {
	var pe *route.PathError
	if errors.As(err, &pe) {
		return []any{"host", host, "candidate", pe.Candidate.String(), "phase", string(pe.Phase), "tier", pe.Tier.String(), "reason", pe.Err.Error()}
	}
	return []any{"host", host, "reason", err.Error()}
}
