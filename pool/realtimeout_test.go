package pool_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// slowThen answers after d (headers included), like a model that thinks long
// before a non-streamed answer or before its stream starts.
func slowThen(d time.Duration, then func(w http.ResponseWriter, r *http.Request, n int, body []byte)) func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
	return func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
		then(w, r, n, body)
	}
}

// TestPoolOwnsTimeouts: the proxy's --response-timeout-ms (here 300 ms,
// standing in for the 60 s default) never cuts a pool call; the pool's own
// settings govern it, and the call is sent to one member only (SPEC POOL-17).
func TestPoolOwnsTimeouts(t *testing.T) {
	t.Run("POOL-17/long-plain-answer-sent-once", func(t *testing.T) {
		w := newRWorld(t, rconf{proxyTimeout: 300 * time.Millisecond, poolExtra: "    strategy: failover\n    response_timeout_ms: 5000\n"},
			[]string{"a", "b"}, slowThen(time.Second, okChannel("a")), okChannel("b"))
		resp, body := w.do("/pool/p/v1/messages", "s1", anthropicBody(false))
		if resp.StatusCode != 200 || !strings.Contains(body, "hi from a") {
			t.Fatalf("status %d body %s", resp.StatusCode, body)
		}
		if a, b := w.ch["a"].calls(), w.ch["b"].calls(); a != 1 || b != 0 {
			t.Fatalf("upstream calls a=%d b=%d, want 1 and 0 (never sent twice)", a, b)
		}
	})
	t.Run("POOL-17/late-stream-head-sent-once", func(t *testing.T) {
		w := newRWorld(t, rconf{proxyTimeout: 300 * time.Millisecond, poolExtra: "    strategy: failover\n    first_output_timeout_ms: 5000\n"},
			[]string{"a", "b"}, slowThen(time.Second, okChannel("a")), okChannel("b"))
		resp, body := w.do("/pool/p/v1/messages", "s1", anthropicBody(true))
		if resp.StatusCode != 200 || !strings.Contains(body, "hi from a") {
			t.Fatalf("status %d body %s", resp.StatusCode, body)
		}
		if a, b := w.ch["a"].calls(), w.ch["b"].calls(); a != 1 || b != 0 {
			t.Fatalf("upstream calls a=%d b=%d, want 1 and 0", a, b)
		}
	})
	t.Run("POOL-17/pool-response-timeout-is-a-knowing-failover", func(t *testing.T) {
		// The pool's own response_timeout_ms (400 ms) expires: that member
		// is class timeout and the pool fails over on purpose.
		w := newRWorld(t, rconf{proxyTimeout: 10 * time.Second, poolExtra: "    strategy: failover\n    response_timeout_ms: 400\n"},
			[]string{"a", "b"}, slowThen(5*time.Second, okChannel("a")), okChannel("b"))
		resp, body := w.do("/pool/p/v1/messages", "s1", anthropicBody(false))
		if resp.StatusCode != 200 || !strings.Contains(body, "hi from b") {
			t.Fatalf("status %d body %s", resp.StatusCode, body)
		}
		if m := w.member("a"); m.CooldownClass != "timeout" {
			t.Fatalf("member a: %+v, want class timeout", m)
		}
	})
}
