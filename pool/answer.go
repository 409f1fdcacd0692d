package pool

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
)

// The answers a client stream writes whole: a member's complete answer (a
// non-streamed call, a count estimate, a member's refusal of the request
// passed through) and the pool's own error.

// answer writes a complete answer: the member's end-to-end headers
// (upstream; keys scrubbed, Content-Encoding only while the body is still
// encoded, wirefmt.DecodeResponse), the pool's head, and body framed by
// Content-Length. translated: body is the pool's JSON translation of the
// member's answer, in no Content-Encoding.
func (s *clientStream) answer(status int, upstream http.Header, head poolHead, translated bool, body []byte) {
	h := s.w.Header()
	copyResponseHeaders(h, upstream, s.scrub)
	if translated {
		h.Del("Content-Encoding")
		h.Set("Content-Type", "application/json")
		s.translated = true
	}
	head.set(h)
	s.ttfb = time.Since(s.start)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	s.w.WriteHeader(status)
	_, _ = s.w.Write(body)
}

// poolError answers with the pool's own error (no member answered; a member
// refused the request after the early head).
// Before any byte it is the API's error document with status, the pool's
// head and, when every member is cooling, Retry-After: the earliest
// recovery in whole seconds, rounded up (retryAfter > 0; RFC 9110
// §10.2.3). After the early head the status is spent: it is the
// API's error event.
func (s *clientStream) poolError(status int, msg string, head poolHead, retryAfter time.Duration, attempts []neutral.Attempt) {
	if s.early {
		s.errorEvent(status, msg)
		return
	}
	h := s.w.Header()
	head.set(h)
	if retryAfter > 0 {
		h.Set("Retry-After", wholeSeconds(retryAfter))
	}
	api.WriteError(s.w, s.flavour, status, msg, attempts)
}

// errorEvent ends a response whose head already went out with the API's
// own error event.
func (s *clientStream) errorEvent(status int, msg string) {
	_ = s.write(s.flavour.ErrorEvent(status, msg))
}

// wholeSeconds is d in whole seconds, rounded up, at least 1.
func wholeSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
