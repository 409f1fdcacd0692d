package pool

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// limitedOnce answers its first call 429 with Retry-After seconds, then as
// okAnswer(who).
func limitedOnce(who, seconds string) behaviour {
	var n atomic.Int64
	limited := statusAnswer(429, map[string]string{"Retry-After": seconds}, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
	ok := okAnswer(who)
	return func(w http.ResponseWriter, r *http.Request, i int) {
		if n.Add(1) == 1 {
			limited(w, r, i)
			return
		}
		ok(w, r, i)
	}
}

// TestRetryAfterBothWays: the pool reads a member's Retry-After as "now"
// when it is 0 or past, answers with its own Retry-After when every member
// cools, calls no member while every one of them is rate-limited, and a
// streamed call waits out a short rate limit of its bound member instead of
// moving the session (SPEC POOL-26).
func TestRetryAfterBothWays(t *testing.T) {
	rl := `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "stream"}[stream]
		t.Run("POOL-26/all-429-answer-carries-retry-after-and-a-retry-calls-no-member/"+name, func(t *testing.T) {
			w := newWorld(t, []string{"a", "b"}, []behaviour{
				statusAnswer(429, map[string]string{"Retry-After": "7"}, rl),
				statusAnswer(429, map[string]string{"Retry-After": "5"}, rl),
			}, "", Options{})
			resp, body := w.call("s1", stream)
			if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "5" {
				t.Fatalf("first call: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
			}
			w.now.Advance(2 * time.Second)
			for _, s := range []string{"s1", "s2"} {
				resp, body = w.call(s, stream)
				if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || !strings.Contains(body, "rate-limited") {
					t.Fatalf("retry of %s: %d Retry-After %q %s", s, resp.StatusCode, resp.Header.Get("Retry-After"), body)
				}
			}
			if a, b := w.mocks["a"].calls(), w.mocks["b"].calls(); a != 1 || b != 1 {
				t.Fatalf("members called %d and %d times: the retries called a cooling member", a, b)
			}
			w.now.Advance(3 * time.Second) // b recovers
			w.mocks["b"].set(okAnswer("b"))
			if resp, body = w.call("s1", stream); resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "b" {
				t.Fatalf("after b's recovery: %d %v %s", resp.StatusCode, resp.Header, body)
			}
		})
	}
	t.Run("POOL-26/aggregated-503-carries-the-earliest-recovery", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{statusAnswer(503, nil, `{}`), statusAnswer(503, nil, `{}`)},
			"    cooldown: {server_ms: 12500}\n", Options{})
		resp, body := w.call("s1", false)
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "13" {
			t.Fatalf("%d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	})
	t.Run("POOL-26/no-retry-after-while-a-member-is-ready", func(t *testing.T) {
		w := newWorld(t, []string{"a"}, []behaviour{statusAnswer(400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`)}, "", Options{})
		if resp, _ := w.call("s1", false); resp.StatusCode != 400 || resp.Header.Get("Retry-After") != "" {
			t.Fatalf("%d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	})
	for _, tc := range []struct {
		name string
		h    map[string]string
	}{
		{"retry-after-0", map[string]string{"Retry-After": "0"}},
		{"retry-after-past-date", map[string]string{"Retry-After": "Mon, 01 Jan 2024 00:00:00 GMT"}},
		{"retry-after-ms-0", map[string]string{"retry-after-ms": "0"}},
	} {
		h := tc.h
		t.Run("POOL-26/may-retry-now-cools-one-second/"+tc.name, func(t *testing.T) {
			w := newWorld(t, []string{"a", "b"}, []behaviour{statusAnswer(429, h, rl), okAnswer("b")}, "", Options{})
			if resp, _ := w.call("s1", false); resp.Header.Get("X-Pool-Member") != "b" {
				t.Fatalf("%v", resp.Header)
			}
			a := w.member("a")
			if a.CooldownClass != config.ClassRateLimit || a.CooldownUntil == nil || !a.CooldownUntil.Equal(w.now.Now().Add(time.Second)) {
				t.Fatalf("a = %+v, want a 1 s rate_limit cooldown", a)
			}
		})
	}
	t.Run("POOL-26/bound-member-429-waited-out-in-the-call", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{okAnswer("a"), okAnswer("b")}, "    keepalive_hold_ms: 100\n", Options{})
		if resp, _ := w.call("s1", true); resp.Header.Get("X-Pool-Member") != "a" {
			t.Fatalf("s1 not bound to a: %v", resp.Header)
		}
		w.mocks["a"].set(limitedOnce("a", "1"))
		start := time.Now()
		resp, body := w.call("s1", true)
		if resp.StatusCode != 200 || !strings.Contains(body, "message_stop") || w.mocks["b"].calls() != 0 {
			t.Fatalf("%d %s, b called %d times", resp.StatusCode, body, w.mocks["b"].calls())
		}
		if el := time.Since(start); el < 900*time.Millisecond {
			t.Fatalf("answered after %v: the 1 s rate limit was not waited out", el)
		}
		if n := count(events(body), "ping"); n == 0 {
			t.Fatalf("no keep-alive while waiting: %q", body)
		}
		if r := w.pool.Status().Recent[0]; r.Member != "a" || r.Failovers != 0 {
			t.Fatalf("record %+v: the session moved", r)
		}
		if w.member("a").BoundSessions != 1 || w.member("b").BoundSessions != 0 {
			t.Fatalf("bindings moved: a %+v b %+v", w.member("a"), w.member("b"))
		}
	})
	t.Run("POOL-26/bound-member-cooling-briefly-waited-for", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{okAnswer("a"), okAnswer("b")}, "", Options{})
		if resp, _ := w.call("s1", true); resp.Header.Get("X-Pool-Member") != "a" {
			t.Fatalf("s1 not bound to a: %v", resp.Header)
		}
		// Another session's call meets a's 429 and fails over to b.
		w.mocks["a"].set(limitedOnce("a", "1"))
		if resp, _ := w.call("s2", true); resp.Header.Get("X-Pool-Member") != "b" {
			t.Fatalf("s2: %v", resp.Header)
		}
		bCalls := w.mocks["b"].calls()
		start := time.Now()
		resp, body := w.call("s1", true)
		if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "a" || w.mocks["b"].calls() != bCalls {
			t.Fatalf("s1: %d %v %s", resp.StatusCode, resp.Header, body)
		}
		if el := time.Since(start); el < 900*time.Millisecond {
			t.Fatalf("answered after %v, before a's recovery", el)
		}
	})
	t.Run("POOL-26/long-rate-limit-or-json-call-moves-the-session", func(t *testing.T) {
		for _, tc := range []struct {
			stream  bool
			seconds string
		}{{true, "30"}, {false, "1"}} {
			w := newWorld(t, []string{"a", "b"}, []behaviour{okAnswer("a"), okAnswer("b")}, "", Options{})
			w.call("s1", tc.stream)
			w.mocks["a"].set(limitedOnce("a", tc.seconds))
			start := time.Now()
			if resp, _ := w.call("s1", tc.stream); resp.Header.Get("X-Pool-Member") != "b" || time.Since(start) > 900*time.Millisecond {
				t.Fatalf("stream=%v Retry-After %s: %v after %v, want b at once", tc.stream, tc.seconds, resp.Header, time.Since(start))
			}
		}
	})
}
