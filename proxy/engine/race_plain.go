package engine

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/ctxdone"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/upstream"
)

// Plain requests and a silent gateway: a gateway
// that accepts TCP and never answers would cost a plain request the whole
// --response-timeout-ms (60 s), and each new host name again. Two rules keep
// that to the race delay:
//
//   - A request that may be sent twice (canReplay) races: without a
//     response head after --race-delay-ms it is sent through the next
//     candidate too, and the first head wins (raceTrip). A cache hit that
//     is a gateway is proved before it is raced: it served this host within
//     --pref-ttl-ms, so a slow head there is most likely the origin's, and
//     sending the request twice would double a slow origin's load; but the
//     gateway may have gone silent since. So with no head after the race
//     delay one CONNECT to the request's host and port goes through it
//     (proveAnswer): an answer means the path is alive and the request
//     waits for its head; no answer within another race delay, or a
//     failure, and the next candidate gets the request too. A direct cache
//     hit is not raced: its silence is the origin's.
//   - A request that may not be sent twice is never raced; when its first
//     candidate is an http or https gateway that has answered nothing since
//     it was configured (unproven), the paths are proved first, raced like
//     tunnels: one CONNECT to the request's own host and port through each
//     unproven gateway (any answer proves it; the tunnel is closed at once),
//     and the request goes through the first path proved (proveFirst).

// raceTrip is Forward for a request that may be sent twice, through
// more than one candidate, with racing on (see above): attempts start in
// plan order, the next one when the one before has no response head after
// lc's race delay, or at once when one fails. The first usable head wins
// (tripAnswer: an origin's answer, or a gateway's own failure answer when
// nothing is left); every other attempt is interrupted (its connection
// closed, nothing pooled) and its response, if one came, discarded; losers
// record no cooldown, but a loser that is an unproven gateway kicks a
// health check, which proves or fails it for every host. The buffered body
// is read by each attempt from the same bytes. Errors as Forward's.
//
// A first attempt that is the host's cache entry is proved before the next
// starts (see the comment at the top): the next attempt starts when the
// proof fails, or has no answer after another race delay; a proof that
// answers leaves the first attempt alone until it ends. A proof that
// failed on its own records its cooldown and is one of tl's failures.
func (e *Engine) raceTrip(ctx context.Context, lc *liveConfig, r *Request, atts []attempt, tl *tripLog) (*upstream.Response, error) {
	rt := tripRace{e: e, ctx: ctx, r: r, atts: atts, done: make(chan tripDone, len(atts)), delay: lc.cfg.RaceDelay}
	defer rt.stopTimer()
	defer rt.stopProof()
	rt.launch()
	for rt.running > 0 {
		select {
		case err := <-rt.proofC:
			rt.proofC = nil
			if err == nil {
				// The cached path answers: the slow head is the origin's.
				if rt.next == 1 {
					rt.timerC = nil
				}
				continue
			}
			rt.proofFailed = true
			var pe *candidate.PathError
			if errors.As(err, &pe) && !ctxdone.Ended(ctx) {
				e.fail(r.Host, r.Port, pe)
				tl.fails = append(tl.fails, pe)
			}
			if rt.next == 1 {
				rt.launchNow()
			}
		case d := <-rt.done:
			rt.running--
			if err := e.tripEnded(ctx, r, tl, d.res); err != nil {
				rt.finish(nil)
				return nil, err
			}
			if d.res.err != nil {
				if err := e.tripFailed(r, tl, d.a.cand, d.res, true); err != nil {
					rt.finish(nil) // out of local resources: no candidate would do better
					return nil, err
				}
				rt.launchNow()
				continue
			}
			final := rt.next >= len(atts) && rt.running == 0
			if resp := e.tripAnswer(lc, r, tl, d.a.cand, d.res.resp, final); resp != nil {
				rt.finish(d.w)
				return resp, nil
			}
			rt.launchNow()
		case <-rt.timerC:
			if ctxdone.Ended(ctx) {
				rt.timerC = nil // the client left or the server stops: no new attempt
				continue
			}
			if rt.next == 1 && atts[0].cached && !rt.proving {
				rt.prove()
				continue
			}
			rt.launch()
		}
	}
	e.allFailed(r.Host, r.caller)
	e.decide(r, tl, "", "all candidates failed")
	return nil, &AllFailedError{Host: r.Host, Errs: tl.fails}
}

// tripDone is one raced attempt's outcome.
type tripDone struct {
	a   attempt
	res tripResult
	w   *raceWatch
}

// tripRace is the state of one raced plain request: its attempts, how many
// started (next) and are running, their watches, and the race delay's
// timer (timerC nil while no attempt is due).
type tripRace struct {
	e       *Engine
	ctx     context.Context
	r       *Request
	atts    []attempt
	done    chan tripDone
	watches []*raceWatch
	next    int
	running int
	delay   time.Duration
	timer   *time.Timer
	timerC  <-chan time.Time

	// The proof of a cached first attempt (raceTrip): proving once one
	// started, proofC its answer's channel until received (nil before and
	// after), proofFailed when it failed or was cut unanswered.
	proving     bool
	proofC      chan error
	proofCancel context.CancelFunc
	proofFailed bool
}

// prove starts the proof of the first attempt's cached path (proveAnswer
// to the request's own host and port) and arms the race delay again: when
// it fires before the proof answered, the next attempt starts.
func (rt *tripRace) prove() {
	rt.proving = true
	ch := make(chan error, 1)
	pctx, cancel := context.WithCancel(rt.ctx)
	rt.proofC, rt.proofCancel = ch, cancel
	e, a, target := rt.e, rt.atts[0], rt.r.addr()
	go func() { ch <- e.proveAnswer(pctx, a, target) }()
	rt.timer.Reset(rt.delay)
	rt.timerC = rt.timer.C
}

// stopProof cuts a proof under way and waits for it to end.
func (rt *tripRace) stopProof() {
	if rt.proofC == nil {
		return
	}
	rt.proofCancel()
	<-rt.proofC
	rt.proofC = nil
	rt.proofFailed = true
}

// launch starts the next attempt on its own goroutine with its own copy of
// the upstream request (no shared response to read into, no connection
// interrupter: a raceWatch), and arms the race delay for the one after.
func (rt *tripRace) launch() {
	a := rt.atts[rt.next]
	rt.next++
	rt.running++
	actx, cancel := context.WithCancel(rt.ctx)
	w := &raceWatch{ctx: rt.ctx, cancel: cancel}
	rt.watches = append(rt.watches, w)
	up := rt.upstreamRequest(w)
	e, body, done := rt.e, rt.r.Body, rt.done
	go func() {
		var rd io.Reader
		if ab, _ := body.open(); ab != nil { // buffered: every attempt reads the same bytes
			rd = ab
		}
		res := e.client.Send(actx, a.cand, up, rd, a.timeout, true)
		// The dial is over and the exchange watched by w: the attempt's
		// context is done with (it only cut a dial short).
		cancel()
		done <- tripDone{a: a, w: w, res: tripResult{resp: res.Resp, err: res.Err, connected: res.Connected,
			local: errors.Is(res.Err, upstream.ErrInvalidRequest)}}
	}()
	if rt.delay > 0 && rt.next < len(rt.atts) {
		if rt.timer == nil {
			rt.timer = time.NewTimer(rt.delay)
		} else {
			rt.timer.Reset(rt.delay)
		}
		rt.timerC = rt.timer.C
	} else {
		rt.timerC = nil
	}
}

// launchNow starts the next attempt after a failure, if one is left and
// the request's context has not ended.
func (rt *tripRace) launchNow() {
	if rt.next < len(rt.atts) && !ctxdone.Ended(rt.ctx) {
		rt.launch()
	}
}

// upstreamRequest is the request one raced attempt sends.
func (rt *tripRace) upstreamRequest(w *raceWatch) *upstream.Request {
	r := rt.r
	up := &upstream.Request{Method: r.Method, Origin: r.Origin, Absolute: r.Absolute, Authority: r.Authority,
		Addr: r.addr(), Header: r.Header, Length: r.Length,
		ResponseTimeout: r.respTimeout, Interrupt: w, HeaderValid: r.HeaderValid}
	if r.Length != 0 {
		up.Reopen = func() io.Reader {
			if ab, _ := r.Body.open(); ab != nil {
				return ab
			}
			return nil
		}
	}
	return up
}

// finish ends the race: every attempt but winner's is interrupted (its
// dial cancelled, its exchange's connection closed), and finish waits for
// each to end, discarding a response that came anyway. A loser that is an
// unproven gateway kicks a health check: it was beaten by the
// race delay without having answered anything yet, which the check turns
// into a verdict for every host.
//
// A cached first attempt that lost after its proof failed or went
// unanswered kicks a health check too: its gateway may have gone silent
// for every host.
func (rt *tripRace) finish(winner *raceWatch) {
	for _, w := range rt.watches {
		if w != winner {
			w.lose()
		}
	}
	rt.stopProof()
	if rt.proving && rt.proofFailed && winner != rt.watches[0] {
		rt.e.kickHealth()
	}
	for rt.running > 0 {
		d := <-rt.done
		rt.running--
		closeResp(d.res.resp)
		if d.res.err != nil && rt.e.unproven(d.a.cand) {
			rt.e.kickHealth()
		}
	}
}

// stopTimer stops the race delay's timer, if one was made.
func (rt *tripRace) stopTimer() {
	if rt.timer != nil {
		rt.timer.Stop()
	}
}

// raceWatch is the upstream.Interrupter of one raced attempt: the
// exchange is interrupted when the request's context ends (a
// context.AfterFunc, as upstream's own watch) or when the attempt lost the
// race (lose).
type raceWatch struct {
	ctx    context.Context // the request's
	cancel context.CancelFunc

	mu   sync.Mutex
	f    func()      // the armed exchange's interrupt
	stop func() bool // its AfterFunc's stop
	lost bool
	ran  bool // f ran or is running: the connection is not reused
}

// Arm implements upstream.Interrupter.
func (w *raceWatch) Arm(f func()) {
	w.mu.Lock()
	if w.lost {
		w.ran = true
		w.mu.Unlock()
		f()
		return
	}
	w.f, w.ran = f, false
	w.stop = context.AfterFunc(w.ctx, f)
	w.mu.Unlock()
}

// Disarm implements upstream.Interrupter.
func (w *raceWatch) Disarm() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	ok := !w.ran
	if w.stop != nil && !w.stop() {
		ok = false // the request's context ended: its AfterFunc ran
	}
	w.f, w.stop = nil, nil
	return ok
}

// lose interrupts the attempt: its dial is cancelled and an armed
// exchange's connection closed; an exchange armed later is interrupted at
// once.
func (w *raceWatch) lose() {
	w.cancel()
	w.mu.Lock()
	w.lost = true
	f := w.f
	if f != nil {
		w.ran = true
	}
	w.mu.Unlock()
	if f != nil {
		f()
	}
}

// proveFirst returns the attempts of a request that may not be sent twice
// with the first path proved leading (see the comment at the top): the
// attempts race as tunnels do (Engine.race), where opening a
// path that needs no proof (direct, SOCKS5, a gateway that has answered)
// succeeds at once and an unproven gateway's is one CONNECT to target.
// The winner leads, the others follow in plan order. Proofs that failed
// on their own (not cut by the win) record their cooldown and are added to
// tl's failures. Errors: the *AllFailedError when no path was proved (the
// request is not sent), the *candidate.PathError of PhaseLocal, or nil
// attempts and no error when ctx ended (the caller's tripEnded decides).
func (e *Engine) proveFirst(ctx context.Context, lc *liveConfig, r *Request, atts []attempt, tl *tripLog) ([]attempt, error) {
	target := r.addr()
	o := e.race(ctx, atts, r.Host, r.Port, target, e.openProof, false, lc.cfg.RaceDelay)
	tl.fails = append(tl.fails, o.fails...)
	switch {
	case o.won != nil:
	case o.local != nil:
		e.cfg.Logger.Warn("out of local resources", "host", r.Host, "reason", o.local.Error())
		e.decide(r, tl, "", "local resources exhausted")
		return nil, o.local
	case ctxdone.Ended(ctx):
		return atts, nil // the first attempt's tripEnded answers for the client or the shutdown
	default:
		e.allFailed(r.Host, r.caller)
		e.decide(r, tl, "", "all candidates failed")
		return nil, &AllFailedError{Host: r.Host, Errs: tl.fails}
	}
	out := make([]attempt, 0, len(atts))
	out = append(out, o.won.att)
	for _, a := range atts {
		if a.cand != o.won.att.cand {
			out = append(out, a)
		}
	}
	return out, nil
}

// provedConn is the "open path" of a proof race's attempt: nothing is
// held open, so closing it does nothing.
type provedConn struct{ net.Conn }

// Close does nothing: no connection was kept.
func (provedConn) Close() error { return nil }

// openProof is the openFunc of proveFirst's race: a candidate that needs
// no proof is open at once; an unproven gateway is sent CONNECT target
// within the attempt's connect timeout, and any answer proves it (a 2xx,
// whose tunnel is closed at once, or a refusal such as squid's 403 for a
// port it does not tunnel: the gateway is alive and forwards plain
// requests its own way), except the gateway-tier refusals 401, 407 and
// 508, which fail the proof as they would fail the request. Silence, a
// close or garbage fail it with the dialer's phase and tier.
func (e *Engine) openProof(ctx context.Context, a attempt, _, target string, _ bool) (net.Conn, error) {
	if !e.unproven(a.cand) {
		return provedConn{}, nil
	}
	if err := e.proveAnswer(ctx, a, target); err != nil {
		return nil, err
	}
	return provedConn{}, nil
}

// proveAnswer opens a path to target through a's candidate within the
// attempt's connect timeout and closes it at once: nil when the path
// answered (opened, or refused with a status that is not a gateway-tier
// one: 401, 407 and 508 fail it as they would fail the request), else the
// dialer's error (a *candidate.PathError with its phase and tier; silence,
// a close or garbage). An http or https gateway that answered is
// marked so (answeredSet).
func (e *Engine) proveAnswer(ctx context.Context, a attempt, target string) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	conn, err := e.dialer.Open(ctx, a.cand, target)
	if err == nil {
		conn.Close()
		e.markAnswered(a.cand)
		return nil
	}
	var pe *candidate.PathError
	if errors.As(err, &pe) && pe.Status != 0 && pe.Tier != candidate.TierGateway {
		e.markAnswered(a.cand)
		return nil
	}
	return err
}

// answeredSet holds the keys of the http and https gateways that have
// answered something (a response head, a CONNECT answer of any status, a
// passing health check) since they were configured (a
// response-head timeout through a gateway not in it is the gateway's
// failure; proveFirst).
type answeredSet struct{ m sync.Map }

// unproven reports whether c is an http or https gateway that has answered
// nothing since it was configured.
func (e *Engine) unproven(c candidate.Candidate) bool {
	if !c.SpeaksHTTP() {
		return false
	}
	_, ok := e.answered.m.Load(c.Key())
	return !ok
}

// markAnswered records that c answered (no store when it is known).
func (e *Engine) markAnswered(c candidate.Candidate) {
	if !c.SpeaksHTTP() {
		return
	}
	k := c.Key()
	if _, ok := e.answered.m.Load(k); !ok {
		e.answered.m.Store(k, struct{}{})
	}
}

// keepAnswered drops the keys keep rejects (candidates a live change
// removed: added again later, they are unproven again).
func (s *answeredSet) keepAnswered(keep func(string) bool) {
	s.m.Range(func(k, _ any) bool {
		if !keep(k.(string)) {
			s.m.Delete(k)
		}
		return true
	})
}
