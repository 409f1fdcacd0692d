package pool

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// clientStream is the client's side of one call: the response writer and
// everything written through it. A response goes through three states, and
// the one it is in decides how anything reaches the client:
//
//   - nothing written: a failure is an HTTP status with the API's error
//     document (poolError), a member's complete answer is written whole
//     (answer.go);
//   - the early head written (keepalive.go): only the pool's head and the
//     API's keep-alives went out, no member's byte; the status is spent, so
//     a failure is the API's error event;
//   - committed (commit): one member's head and held preamble went out;
//     from then on only that member's events, the pool's pings and at most
//     one error event (send).
//
// The write lock mu orders the serving goroutine's writes and a ticker's
// (keep-alives before the commit point, pings after it), so a keep-alive
// never lands inside an event's bytes.
type clientStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController // made on the first flush, not per event
	flavour api.Flavour              // the client's API: its pings, error documents and events
	// scrub removes configured keys from the member headers copied to
	// the client; bodies and events come scrubbed by the attempt, which
	// rewrites them anyway.
	scrub config.Scrubber
	start time.Time // the call's start (monotonic): time to first byte, keep-alive hold

	mu        sync.Mutex // the write lock
	unflushed bool       // under mu: bytes written and not flushed yet (send)

	// ttfb and translated describe the answer for the call's record:
	// the time to the answer's head or the commit point, and whether the
	// client got a member's answer translated.
	ttfb       time.Duration
	translated bool

	keepAlive // before the commit point (keepalive.go)
}

// poolHead is what the pool says about a call in its response headers: the
// member that answers ("pending" before a commit, "none" for the pool's own
// error), that member's own model id (named: the member is a channel), the
// attempts so far including this one, and the session's hash.
type poolHead struct {
	member, memberModel, session string
	named                        bool
	attempts                     int
}

// set writes the head into h.
func (ph poolHead) set(h http.Header) {
	h.Set("X-Pool-Member", ph.member)
	if ph.named {
		h.Set("X-Pool-Member-Model", ph.memberModel)
	}
	h.Set("X-Pool-Attempts", strconv.Itoa(ph.attempts))
	if ph.session != "" {
		h.Set("X-Pool-Session", ph.session)
	}
}

// commit is a streamed answer's commit point (SPEC POOL-7): the
// response head (the member's status and end-to-end headers, the
// event-stream fields, the pool's head) and the held bytes, flushed. After
// an early head only the held bytes are written: the client has seen
// keep-alives, and now this attempt's preamble and first output. The
// keep-alive ticker must be stopped before.
func (s *clientStream) commit(status int, upstream http.Header, head poolHead, translated bool, held []byte) error {
	s.ttfb, s.translated = time.Since(s.start), translated
	if !s.early {
		h := s.w.Header()
		copyResponseHeaders(h, upstream, s.scrub)
		h.Del("Content-Encoding")
		setEventStream(h)
		head.set(h)
		s.w.WriteHeader(status)
	}
	return s.write(held)
}

// setEventStream sets the fields of a streamed answer: no cache, no proxy
// buffering (nginx's X-Accel-Buffering), so each event reaches the client
// as it is flushed.
func setEventStream(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
}

// send writes b to the client under the write lock, after the commit
// point; flush false leaves it in the response's buffer because the next
// event is already here (EventBuffered): the flush after that one carries
// both.
func (s *clientStream) send(b []byte, flush bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(b) > 0 {
		if _, err := s.w.Write(b); err != nil {
			return err
		}
		s.unflushed = true
	}
	if !flush || !s.unflushed {
		return nil
	}
	return s.flush()
}

// write writes b to the client and flushes (events are
// flushed as they arrive). While a ticker may write it runs under mu: the
// ticker's own callback, or send.
func (s *clientStream) write(b []byte) error {
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.flush()
}

// flush flushes what was written.
func (s *clientStream) flush() error {
	if s.rc == nil {
		s.rc = http.NewResponseController(s.w)
	}
	s.unflushed = false
	return s.rc.Flush()
}

// ticker runs fn on a timer under the client stream's write lock, then
// again after the wait fn returns while its ok is true. After stop returns
// fn never runs again (stop takes the same lock), so nothing is written to
// the client once the serving goroutine has moved on.
type ticker struct {
	s   *clientStream
	t   *lazyTimer
	off bool // under s.mu
}

func (s *clientStream) startTicker(first time.Duration, fn func() (next time.Duration, ok bool)) *ticker {
	k := &ticker{s: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	k.t = afterFuncLazy(first, func(*lazyTimer) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if k.off {
			return
		}
		if d, ok := fn(); ok {
			k.t.again(d)
		}
	})
	return k
}

// reset sets the ticker's next run d after now (monoNow; an atomic store:
// the relay calls it after every event).
func (k *ticker) reset(now, d time.Duration) { k.t.pushFrom(now, d) }

// stop ends the ticker (a nil ticker is stopped).
func (k *ticker) stop() {
	if k == nil {
		return
	}
	k.t.stop()
	k.s.mu.Lock()
	k.off = true
	k.s.mu.Unlock()
}

// pings writes the API's ping while a committed stream is quiet (at least every
// 30 s); the relay pushes it after each event (reset). gone runs when the write
// fails: the client left.
func (s *clientStream) pings(gone func()) *ticker {
	every := s.every
	return s.startTicker(every, func() (time.Duration, bool) {
		if s.write(s.flavour.PingEvent()) != nil {
			s.gone.Store(true)
			gone()
			return 0, false
		}
		return every, true
	})
}
