package engine

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// result is the outcome of one attempt to open a candidate.
type result struct {
	att  attempt
	conn net.Conn
	err  error
}

// Open opens a path to host:port for a CONNECT tunnel (SPEC CON-1,
// ORD-6). Attempts start in plan order; when the path being opened is not
// open after RaceDelay, the next one starts in parallel, and a failed
// attempt starts the next at once (RFC 8305 style). "Open" means connected,
// the gateway's CONNECT answered 2xx, and on port 443 with TLSProbe a TLS
// handshake probe passed over a separate path, except for the attempt that
// is the host's cache hit (that path worked within the TTL). The first open path wins; no attempt
// starts after it; the others are cancelled, and a loser whose path opened
// anyway is closed, before Open returns (no leak). Failures of losers
// cancelled by the win, and failures caused by ctx ending (client gone,
// Server.Shutdown), record no cooldown.
// It returns the connection and its candidate, an *AllFailedError, or
// the *candidate.PathError of PhaseLocal when this machine ran out of
// descriptors (no cooldown recorded, no further attempt started).
func (e *Engine) Open(ctx context.Context, host string, port int) (net.Conn, candidate.Candidate, error) {
	start := time.Now()
	target := net.JoinHostPort(host, strconv.Itoa(port))
	lc := e.live.Load() // this tunnel's configuration: a reload mid-open does not mix two
	atts, _ := e.planFor(lc, host, port, lc.cfg.LoopbackDirect && isLoopback(host))
	open := e.openVerified
	if e.openAttempt != nil {
		open = e.openAttempt
	}
	var o outcome
	if len(atts) == 1 {
		// Nothing to race (loopback direct, or one path configured): the
		// attempt runs here, without a goroutine, channel or timer (CPU
		// per new tunnel), and a probe cannot change the outcome,
		// only cost a handshake.
		o = e.openOnly(ctx, atts[0], host, port, target, open)
	} else {
		o = e.race(ctx, atts, host, port, target, open, lc.cfg.TLSProbe && port == 443, lc.cfg.RaceDelay)
	}
	if o.won != nil {
		e.markAnswered(o.won.att.cand)
		e.succeed(host, o.won.att.cand)
		e.decisions.Add(statusdoc.Decision{Time: start, Kind: "connect", Host: host, Candidate: lc.candName(o.won.att.cand), Failed: statusdoc.Failures(o.fails), LatencyMS: ms(time.Since(start)), Caller: callerOf(ctx)})
		return o.won.conn, o.won.att.cand, nil
	}
	if o.local != nil {
		e.cfg.Logger.Warn("out of local resources", "host", host, "reason", o.local.Error())
		e.decisions.Add(statusdoc.Decision{Time: start, Kind: "connect", Host: host, Failed: statusdoc.Failures(o.fails), LatencyMS: ms(time.Since(start)), Error: "local resources exhausted"})
		return nil, candidate.Candidate{}, o.local
	}
	why := "all candidates failed"
	switch {
	case context.Cause(ctx) == errClientGone:
		why = "client gone" // as a plain request's (trip.go)
	case ctx.Err() == nil:
		e.allFailed(host, callerOf(ctx)) // not when the client left or the server stops
	}
	e.decisions.Add(statusdoc.Decision{Time: start, Kind: "connect", Host: host, Failed: statusdoc.Failures(o.fails), LatencyMS: ms(time.Since(start)), Error: why, Caller: callerOf(ctx)})
	return nil, candidate.Candidate{}, &AllFailedError{Host: host, Errs: o.fails}
}

// openFunc opens the path of one attempt (openVerified, or a test's).
type openFunc func(ctx context.Context, a attempt, host, target string, probe bool) (net.Conn, error)

// outcome is what the attempts of one Open came to: the winner (nil
// if none), the failures in the order they arrived, and the first local
// resource failure (PhaseLocal).
type outcome struct {
	won   *result
	fails []error
	local error
}

// openOnly runs the single attempt of a plan on the calling goroutine,
// with the same bookkeeping as race: a failure records its cooldown unless
// ctx ended; a local resource failure records none.
func (e *Engine) openOnly(ctx context.Context, a attempt, host string, port int, target string, open openFunc) outcome {
	conn, err := open(ctx, a, host, target, false)
	if err == nil {
		return outcome{won: &result{att: a, conn: conn}}
	}
	o := outcome{fails: []error{err}}
	if candidate.IsLocal(err) {
		o.local = err
		return o
	}
	var pe *candidate.PathError
	if errors.As(err, &pe) && ctx.Err() == nil {
		e.fail(host, port, pe)
	}
	return o
}

// race runs the attempts of a plan with more than one candidate (see
// Open): probe is whether attempts other than the cache hit run the
// TLS probe first; delay is the race delay (0: off). An
// attempt starts when the race delay passes (unless ctx ended) and when
// one fails (raceResult); the first path that opens wins.
func (e *Engine) race(ctx context.Context, atts []attempt, host string, port int, target string, open openFunc, probe bool, delay time.Duration) outcome {
	raceCtx, cancelRace := context.WithCancel(ctx)
	defer cancelRace()
	rc := racer{atts: atts, results: make(chan result, len(atts)), ctx: raceCtx, open: open, host: host, target: target, probe: probe, delay: delay}
	defer rc.stopTimer()

	var o outcome
	rc.launch()
	for rc.running > 0 {
		select {
		case r := <-rc.results:
			rc.running--
			e.raceResult(ctx, &rc, &o, r, port, cancelRace)
		case <-rc.timerC:
			if ctx.Err() != nil {
				rc.timerC = nil // the client left or the server stops: no new attempt
				continue
			}
			rc.launch()
		}
	}
	return o
}

// racer is the state of one race: the plan's attempts, how
// many started (next) and are still running, and the race delay's timer,
// whose channel is nil while no attempt is due.
type racer struct {
	atts          []attempt
	next, running int
	results       chan result
	timer         *time.Timer
	timerC        <-chan time.Time
	delay         time.Duration

	ctx          context.Context // the race's: cancelled by the win
	open         openFunc
	host, target string
	probe        bool
}

// launch starts the next attempt on its own goroutine, which sends its
// result to rc.results, and arms the race delay for the one after it.
// The goroutine gets copies, not rc (rc stays on race's stack).
func (rc *racer) launch() {
	a := rc.atts[rc.next]
	rc.next++
	rc.running++
	ctx, open, host, target, probe, results := rc.ctx, rc.open, rc.host, rc.target, rc.probe && !a.cached, rc.results
	go func() {
		conn, err := open(ctx, a, host, target, probe)
		results <- result{att: a, conn: conn, err: err}
	}()
	rc.armTimer()
}

// armTimer arms the race delay when an attempt is left to start (one
// timer per race, reset for each), else clears rc.timerC.
func (rc *racer) armTimer() {
	if rc.delay <= 0 || rc.next >= len(rc.atts) {
		rc.timerC = nil
		return
	}
	if rc.timer == nil {
		rc.timer = time.NewTimer(rc.delay)
	} else {
		rc.timer.Reset(rc.delay)
	}
	rc.timerC = rc.timer.C
}

// stopTimer stops the race delay's timer, if one was made.
func (rc *racer) stopTimer() {
	if rc.timer != nil {
		rc.timer.Stop()
	}
}

// raceResult takes one attempt's result into o: the
// first open path wins, no attempt starts after it and the others are
// cancelled; a path that opens after the win is closed; a loser's failure
// after the win records nothing; a local resource failure stops launching
// (running attempts finish); any other failure cools its candidate down
// (unless ctx ended) and starts the next attempt at once.
func (e *Engine) raceResult(ctx context.Context, rc *racer, o *outcome, r result, port int, cancelRace context.CancelFunc) {
	if r.err == nil {
		if o.won != nil {
			r.conn.Close()
			return
		}
		o.won = &r
		rc.timerC = nil // no attempt starts after the win
		cancelRace()    // losers stop; drained by race
		return
	}
	if o.won != nil {
		return // a loser we cancelled: no cooldown
	}
	o.fails = append(o.fails, r.err)
	if candidate.IsLocal(r.err) {
		// Out of descriptors: no candidate is to blame and none would do
		// better; stop launching (running ones finish).
		o.local, rc.next = r.err, len(rc.atts)
		rc.timerC = nil
		return
	}
	var pe *candidate.PathError
	if errors.As(r.err, &pe) && ctx.Err() == nil {
		e.fail(rc.host, port, pe)
	}
	if rc.next < len(rc.atts) && ctx.Err() == nil {
		rc.launch()
	}
}

// openVerified opens the path of one attempt within its connect timeout;
// with probe, it first runs the TLS handshake probe over a separate path
// (SNI = host, certificate not verified: it proves a TLS server answers
// through the path, the client verifies its own handshake) and closes it.
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
// of the handshake is PhaseTLSProbe, TierHost (the gateway may reach other
// hosts); failures to open
// the path keep their own phase.
func (e *Engine) tlsProbe(ctx context.Context, c candidate.Candidate, host, target string) error {
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
		return &candidate.PathError{Candidate: c, Phase: candidate.PhaseTLSProbe, Tier: candidate.TierHost, Err: err}
	}
	return nil
}

// TLSProbes returns how many TLS probes the engine has started.
func (e *Engine) TLSProbes() int64 { return e.tlsProbes.Load() }
