package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/path"
	"github.com/dual-proxy/dual-proxy/proxy/status"
)

// result is the outcome of one attempt to open a path.
type result struct {
	att  attempt
	conn net.Conn
	err  error
}

// openTunnel opens a path to host:port for a CONNECT tunnel (SPEC CON-1,
// ORD-6). Attempts start in plan order; when the path being opened is not
// open after RaceDelay, the next one starts in parallel, and a failed
// attempt starts the next at once (RFC 8305 style). "Open" means connected,
// the gateway's CONNECT answered 2xx, and on port 443 with TLSProbe a TLS
// handshake probe passed over a separate path, except for the attempt that
// is the host's cache hit (ORD-4). The first open path wins; no attempt
// starts after it; the others are cancelled, and a loser whose path opened
// anyway is closed, before openTunnel returns (no leak). Failures of losers
// cancelled by the win, and failures caused by ctx ending (client gone,
// Server.Shutdown), record no cooldown.
// It returns the connection and its candidate, an *AllFailedError, or
// the *path.PathError of PhaseLocal when this machine ran out of
// descriptors (no cooldown recorded, no further attempt started).
// One function on purpose: launch, the race timer and the result loop
// share the attempt counters, and split apart they would need a struct
// whose only job is to hold them.
func (e *Engine) openTunnel(ctx context.Context, host string, port int) (net.Conn, path.Candidate, error) {
	start := time.Now()
	target := net.JoinHostPort(host, strconv.Itoa(port))
	atts, _ := e.plan(host, port)
	// With a single candidate (loopback direct, or one path configured) a
	// probe cannot change the outcome, only cost a handshake.
	probe := e.cfg.TLSProbe && port == 443 && len(atts) > 1

	raceCtx, cancelRace := context.WithCancel(ctx)
	defer cancelRace()
	open := e.openVerified
	if e.openAttempt != nil {
		open = e.openAttempt
	}
	results := make(chan result, len(atts))
	next, running := 0, 0
	launch := func() {
		a := atts[next]
		next++
		running++
		go func() {
			conn, err := open(raceCtx, a, host, target, probe && !a.cached)
			results <- result{att: a, conn: conn, err: err}
		}()
	}
	var timer *time.Timer
	var timerC <-chan time.Time
	armTimer := func() {
		if e.cfg.RaceDelay <= 0 || next >= len(atts) {
			timerC = nil
			return
		}
		if timer == nil {
			timer = time.NewTimer(e.cfg.RaceDelay)
		} else {
			timer.Reset(e.cfg.RaceDelay)
		}
		timerC = timer.C
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()

	var fails []error
	var won *result
	var local error // the first local resource failure (PhaseLocal)
	launch()
	armTimer()
	for running > 0 {
		select {
		case r := <-results:
			running--
			if r.err == nil {
				if won == nil {
					won = &r
					timerC = nil // no attempt starts after the win
					cancelRace() // losers stop; drained below
				} else {
					r.conn.Close()
				}
				continue
			}
			if won != nil {
				continue // a loser we cancelled: no cooldown
			}
			fails = append(fails, r.err)
			if isLocal(r.err) {
				// Out of descriptors: no candidate is to blame and none
				// would do better; stop launching (running ones finish).
				local, next = r.err, len(atts)
				timerC = nil
				continue
			}
			var pe *path.PathError
			if errors.As(r.err, &pe) && ctx.Err() == nil {
				e.fail(host, port, pe)
			}
			if next < len(atts) && ctx.Err() == nil {
				launch()
				armTimer()
			}
		case <-timerC:
			launch()
			armTimer()
		}
	}
	if won != nil {
		e.succeed(host, won.att.cand)
		e.decisions.Add(status.Decision{Time: start, Kind: "connect", Host: host, Candidate: won.att.cand.String(), Failed: status.Failures(fails), LatencyMS: ms(time.Since(start))})
		return won.conn, won.att.cand, nil
	}
	if local != nil {
		e.cfg.Logger.Warn("out of local resources", "host", host, "reason", local.Error())
		e.decisions.Add(status.Decision{Time: start, Kind: "connect", Host: host, Failed: status.Failures(fails), LatencyMS: ms(time.Since(start)), Error: "local resources exhausted"})
		return nil, path.Candidate{}, local
	}
	if ctx.Err() == nil {
		e.allFailed(host) // not when the client left or the server stops
	}
	e.decisions.Add(status.Decision{Time: start, Kind: "connect", Host: host, Failed: status.Failures(fails), LatencyMS: ms(time.Since(start)), Error: "all candidates failed"})
	return nil, path.Candidate{}, &AllFailedError{Host: host, Errs: fails}
}

// openVerified opens the path of one attempt within its connect timeout;
// with probe, it first runs the TLS handshake probe over a separate path
// (SPEC CON-1: SNI = host, certificate not verified) and closes it.
func (e *Engine) openVerified(ctx context.Context, a attempt, host, target string, probe bool) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	if probe {
		if err := e.tlsProbe(ctx, a.cand, host, target); err != nil {
			return nil, err
		}
	}
	return e.dialer.Open(ctx, a.cand, target)
}

// tlsProbe checks that a TLS server answers at target through c. Failure
// of the handshake is PhaseTLSProbe, TierHost (SPEC CD-1); failures to open
// the path keep their own phase.
func (e *Engine) tlsProbe(ctx context.Context, c path.Candidate, host, target string) error {
	e.tlsProbes.Add(1)
	conn, err := e.dialer.Open(ctx, c, target)
	if err != nil {
		return err
	}
	defer conn.Close()
	sni := host
	if ip := net.ParseIP(host); ip != nil {
		sni = "" // RFC 6066 §3: no IP literals in SNI
	}
	tc := tls.Client(conn, &tls.Config{ServerName: sni, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12,
		// One classic group: the probe proves a TLS server answers; a
		// post-quantum key share only makes each probe dearer.
		CurvePreferences: []tls.CurveID{tls.X25519}})
	if err := tc.HandshakeContext(ctx); err != nil {
		return &path.PathError{Candidate: c, Phase: path.PhaseTLSProbe, Tier: path.TierHost, Err: err}
	}
	return nil
}

// TLSProbes returns how many TLS probes the engine has started.
func (e *Engine) TLSProbes() int64 { return e.tlsProbes.Load() }
