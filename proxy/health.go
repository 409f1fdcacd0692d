package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/netutil"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/upstream"
)

// minKickGap is the least time between two kicked health checks (SPEC
// HC-2: at most once per second).
const minKickGap = time.Second

// healthResponseTimeout bounds the wait for the health URL's status line
// once the path is open.
const healthResponseTimeout = 10 * time.Second

// healthChecker runs health checks (SPEC HC-1, HC-2) on one goroutine:
// every HealthInterval, and when kicked by a path failure, at most once per
// second. One run at a time; kicks during a run are coalesced into one.
type healthChecker struct {
	e       *Engine
	kickC   chan struct{} // capacity 1: pending kick
	rearmC  chan struct{} // capacity 1: the health URL or interval changed
	done    chan struct{}
	stopped sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc

	runMu sync.Mutex // held for a whole run: one check at a time (HC-2)

	mu   sync.Mutex
	runs int
}

func newHealthChecker(e *Engine) *healthChecker {
	h := &healthChecker{e: e, kickC: make(chan struct{}, 1), rearmC: make(chan struct{}, 1), done: make(chan struct{})}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.stopped.Add(1)
	go h.loop()
	return h
}

// kick asks for a check soon; it never blocks.
func (h *healthChecker) kick() {
	select {
	case h.kickC <- struct{}{}:
	default:
	}
}

// rearm makes the loop take the current health URL and interval (SPEC
// OPS-7): a new period, and a first check at once when periodic checks
// are on, as at start. It never blocks.
func (h *healthChecker) rearm() {
	select {
	case h.rearmC <- struct{}{}:
	default:
	}
}

func (h *healthChecker) stop() {
	h.cancel()
	close(h.done)
	h.stopped.Wait()
}

func (h *healthChecker) loop() {
	defer h.stopped.Done()
	var ticker *time.Ticker
	var tick <-chan time.Time
	var lastRun time.Time
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	arm := func() {
		if ticker != nil {
			ticker.Stop()
			ticker, tick = nil, nil
		}
		lc := h.e.live.Load()
		if iv := lc.cfg.HealthInterval; iv > 0 && lc.cfg.HealthURL != nil {
			ticker = time.NewTicker(iv)
			tick = ticker.C
			lastRun = time.Now()
			h.run() // a first check at start; kicks wait minKickGap after it
		}
	}
	arm()
	for {
		select {
		case <-h.done:
			return
		case <-h.rearmC:
			arm()
			continue
		case <-tick:
		case <-h.kickC:
			if wait := minKickGap - time.Since(lastRun); !lastRun.IsZero() && wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-h.done:
					t.Stop()
					return
				}
			}
		}
		lastRun = time.Now()
		h.run()
		// A kick that arrived during the run is served by the next loop
		// iteration, after the one-second gap.
	}
}

// run checks candidates in default order until the health state has its
// preference (SPEC HC-1), clearing the gateway cooldown of every candidate
// proved alive (SPEC CD-2). Runs never overlap (runMu); tests may call it
// directly while the loop is running. A run cut short by stop records
// nothing.
func (h *healthChecker) run() {
	h.runMu.Lock()
	defer h.runMu.Unlock()
	lc := h.e.live.Load() // this run's candidates and URL (SPEC OPS-7)
	if h.ctx.Err() != nil || lc.cfg.HealthURL == nil {
		return
	}
	h.mu.Lock()
	h.runs++
	h.mu.Unlock()
	var results []route.HealthResult
	for _, c := range lc.cfg.Candidates {
		if h.ctx.Err() != nil {
			return
		}
		r, local := h.e.checkHealth(h.ctx, lc, c)
		if local {
			// Out of descriptors: the check learned nothing about c or
			// the others; record nothing.
			h.e.cfg.Logger.Warn("health check skipped: out of local resources", "reason", r.Reason)
			return
		}
		results = append(results, r)
		if r.Alive {
			h.e.cooldowns.ClearGateway(c.Key())
		}
		h.e.cfg.Logger.Debug("health check", "candidate", c.String(), "alive", r.Alive, "reason", r.Reason)
		if !h.e.health.WantsMore(results) {
			break
		}
	}
	if h.ctx.Err() != nil {
		return // stopped mid-run: the last result may be the cancel's
	}
	h.e.health.Record(results)
	if p := h.e.health.Preferred(); p != "" {
		h.e.cfg.Logger.Info("health check done", "preferred", p)
		return
	}
	// No candidate reached the health URL: say why, per candidate, at the
	// default level (preferred="" alone does not tell a dead gateway
	// from an offline machine). The URL's host only,
	// never its path (SPEC OPS-1).
	var why strings.Builder
	for i, r := range results {
		if i > 0 {
			why.WriteString("; ")
		}
		why.WriteString(r.Key + ": " + r.Reason)
	}
	h.e.cfg.Logger.Warn("health check: no candidate reached the health URL", "host", lc.cfg.HealthURL.Host, "tried", why.String())
}

// HealthRuns returns how many health checks have started (tests, status).
func (e *Engine) HealthRuns() int {
	e.checker.mu.Lock()
	defer e.checker.mu.Unlock()
	return e.checker.runs
}

// checkHealth sends GET HealthURL (of lc) through c and reports whether an origin
// answered with a status below 500 (SPEC HC-1). Answers a gateway makes
// itself never count: 407, a non-2xx answer to CONNECT, and its own 5xx
// pages (which fail the < 500 test anyway). No origin credentials are sent.
// local is true when the check could not be made because this machine ran
// out of descriptors or memory (the result then says nothing about c).
//
// The request goes out through proxy/upstream, the client of plain
// forwarding, as one exchange on a fresh connection that closes after it
// (upstream.Request.Close): an http:// URL through the engine's client
// (absolute-form with Proxy-Authorization to an http or https gateway,
// origin-form to the origin on direct or SOCKS5, SPEC GW-4, GW-7), an
// https:// URL through a client whose dial opens a tunnel through c and
// runs TLS to the origin over it (healthTLSClient).
func (e *Engine) checkHealth(ctx context.Context, lc *liveConfig, c candidate.Candidate) (_ route.HealthResult, local bool) {
	u := lc.cfg.HealthURL
	res := route.HealthResult{Key: c.Key()}
	ctx, cancel := context.WithTimeout(ctx, lc.cfg.ConnectTimeout+healthResponseTimeout)
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
		Header: []httpmsg.Field{{Name: "User-Agent", Value: "dual-proxy-health/1"}},
		// The context bounds the whole check, as the response wait.
		ResponseTimeout: -1, Close: true}
	client, wire := &e.client, c
	if u.Scheme == "https" {
		// The TLS connection leads to the origin itself: the request is
		// written as to an origin (origin-form, no Proxy-Authorization),
		// which is what candidate.Direct stands for on the wire.
		client, wire = e.healthTLSClient(c, u.Hostname()), candidate.Direct
	}
	sent := client.Send(ctx, wire, r, nil, lc.cfg.ConnectTimeout, false)
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
	case wire.SpeaksHTTP() && isGatewayFailure(c, resp.StatusCode, resp.Get("Server")):
		res.Reason = "gateway answered " + strconv.Itoa(resp.StatusCode)
	case resp.StatusCode >= 500:
		res.Reason = "status " + strconv.Itoa(resp.StatusCode)
	default:
		res.Alive = true
	}
	return res, false
}

// healthTLSClient is the upstream client of one https:// health check
// through c: its dial opens a tunnel to the origin (dial.Open: CONNECT
// through a gateway, SOCKS5, or direct) and runs TLS to host over it, both
// within the check's connect timeout; a handshake failure is "tls: …".
// Its requests close their connection, so its idle pool stays empty.
func (e *Engine) healthTLSClient(c candidate.Candidate, host string) *upstream.Client {
	return &upstream.Client{ResponseTimeout: healthResponseTimeout,
		Dial: func(ctx context.Context, _ candidate.Candidate, addr string) (net.Conn, error) {
			conn, err := e.dialer.Open(ctx, c, addr)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(conn, e.healthTLS(host))
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, fmt.Errorf("tls: %w", err)
			}
			return tc, nil
		}}
}

// healthTLS is the TLS configuration for an https:// health URL.
func (e *Engine) healthTLS(host string) *tls.Config {
	var c *tls.Config
	if e.cfg.HealthTLS != nil {
		c = e.cfg.HealthTLS.Clone()
	} else {
		c = &tls.Config{}
	}
	c.ServerName = host
	return c
}
