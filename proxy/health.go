package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/netutil"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
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
func (e *Engine) checkHealth(ctx context.Context, lc *liveConfig, c candidate.Candidate) (_ route.HealthResult, local bool) {
	u := lc.cfg.HealthURL
	res := route.HealthResult{Key: c.Key()}
	ctx, cancel := context.WithTimeout(ctx, lc.cfg.ConnectTimeout+healthResponseTimeout)
	defer cancel()
	host := u.Hostname()
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	target := net.JoinHostPort(host, port)
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		res.Reason = err.Error()
		return res, false
	}
	req.Header.Set("User-Agent", "dual-proxy-health/1")
	req.Close = true

	var conn net.Conn
	absolute := false
	openCtx, openCancel := context.WithTimeout(ctx, lc.cfg.ConnectTimeout)
	switch {
	case u.Scheme == "https":
		conn, err = e.dialer.Open(openCtx, c, target)
		if err == nil {
			tc := tls.Client(conn, e.healthTLS(host))
			if herr := tc.HandshakeContext(openCtx); herr != nil {
				conn.Close()
				err = fmt.Errorf("tls: %w", herr)
			} else {
				conn = tc
			}
		}
	default:
		// Plain http: to an http/https gateway in absolute-form, else to
		// the origin (direct or a SOCKS5 tunnel, SPEC GW-7).
		conn, err = e.dialer.Forward(openCtx, c, target)
		absolute = c.SpeaksHTTP()
		if auth := c.ProxyAuthorization(); auth != "" {
			req.Header.Set("Proxy-Authorization", auth)
		}
	}
	openCancel()
	if err != nil {
		res.Reason = err.Error()
		return res, netutil.IsLocalResource(err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if absolute {
		err = req.WriteProxy(conn)
	} else {
		err = req.Write(conn)
	}
	if err != nil {
		res.Reason = "write: " + err.Error()
		return res, false
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		res.Reason = "response: " + err.Error()
		return res, false
	}
	resp.Body.Close()
	switch {
	case absolute && isGatewayFailure(c, resp.StatusCode, resp.Header.Get("Server")):
		res.Reason = "gateway answered " + strconv.Itoa(resp.StatusCode)
	case resp.StatusCode >= 500:
		res.Reason = "status " + strconv.Itoa(resp.StatusCode)
	default:
		res.Alive = true
	}
	return res, false
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
