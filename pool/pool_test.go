package pool

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

func three() ([]string, []behaviour) {
	return []string{"a", "b", "c"}, []behaviour{okAnswer("a"), okAnswer("b"), okAnswer("c")}
}

func TestStickyAssignment(t *testing.T) {
	t.Run("POOL-4/nine-sessions-spread-3-3-3-and-stay", func(t *testing.T) {
		names, bs := three()
		w := newWorld(t, names, bs, "", Options{})
		first := map[string]string{}
		perMember := map[string]int{}
		for i := 0; i < 9; i++ {
			s := fmt.Sprintf("session-%d", i)
			resp, body := w.call(s, true)
			if resp.StatusCode != 200 || count(events(body), "message_stop") != 1 {
				t.Fatalf("call %d: %d %q", i, resp.StatusCode, body)
			}
			m := resp.Header.Get("X-Pool-Member")
			first[s] = m
			perMember[m]++
		}
		if perMember["a"] != 3 || perMember["b"] != 3 || perMember["c"] != 3 {
			t.Fatalf("spread = %v, want 3/3/3", perMember)
		}
		for round := 0; round < 2; round++ {
			for i := 0; i < 9; i++ {
				s := fmt.Sprintf("session-%d", i)
				resp, _ := w.call(s, i%2 == 0)
				if got := resp.Header.Get("X-Pool-Member"); got != first[s] {
					t.Fatalf("%s moved %s → %s", s, first[s], got)
				}
			}
		}
		for _, m := range w.pool.Status().Pools[0].Members {
			if m.BoundSessions != 3 {
				t.Fatalf("status bound sessions %s = %d", m.ID, m.BoundSessions)
			}
		}
	})
	t.Run("POOL-4/idle-binding-past-ttl-is-balanced-again", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{okAnswer("a"), okAnswer("b")}, "    session_ttl_ms: 1000\n", Options{})
		member := func(s string) string { r, _ := w.call(s, true); return r.Header.Get("X-Pool-Member") }
		if m := member("s1"); m != "a" {
			t.Fatalf("s1 → %s", m)
		}
		if m := member("s2"); m != "b" {
			t.Fatalf("s2 → %s", m)
		}
		if m := member("s3"); m != "a" {
			t.Fatalf("s3 → %s", m)
		}
		w.now.Advance(600 * time.Millisecond)
		member("s2")
		member("s3")
		if m := member("s3"); m != "a" { // live binding: sticky
			t.Fatalf("s3 within ttl → %s", m)
		}
		w.now.Advance(600 * time.Millisecond) // s1 idle 1200 ms > ttl; s2, s3 600 ms
		for _, s := range w.pool.Status().Sessions {
			if s.Session == balance.SessionHash("s1") {
				t.Fatalf("s1 binding listed after its ttl: %+v", s)
			}
		}
		// Balanced again: loads a=1 (s3), b=1 (s2), rotation points at b.
		// A pinned binding would have kept s1 on a.
		if m := member("s1"); m != "b" {
			t.Fatalf("s1 after ttl → %s, want rebalanced to b", m)
		}
	})
	t.Run("POOL-5/five-concurrent-first-calls-share-one-member", func(t *testing.T) {
		var mu sync.Mutex
		arrived := 0
		gate := make(chan struct{})
		gated := func(who string) behaviour {
			return func(w http.ResponseWriter, r *http.Request, n int) {
				mu.Lock()
				arrived++
				if arrived == 5 {
					close(gate)
				}
				mu.Unlock()
				select {
				case <-gate:
				case <-time.After(3 * time.Second):
				}
				okAnswer(who)(w, r, n)
			}
		}
		w := newWorld(t, []string{"a", "b", "c"}, []behaviour{gated("a"), gated("b"), gated("c")}, "", Options{})
		var wg sync.WaitGroup
		got := make(chan string, 5)
		for i := 0; i < 5; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp := w.do(context.Background(), "/pool/p/v1/messages", map[string]string{"X-Claude-Code-Session-Id": "burst"}, msgBody("m", true))
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				got <- resp.Header.Get("X-Pool-Member")
			}()
		}
		wg.Wait()
		close(got)
		seen := map[string]int{}
		for m := range got {
			seen[m]++
		}
		if len(seen) != 1 {
			t.Fatalf("burst scattered: %v", seen)
		}
	})
}

func TestFailover(t *testing.T) {
	t.Run("POOL-7/error-event-before-content-fails-over-one-message-start", func(t *testing.T) {
		overloaded := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			messageStart(w, "a", nil)
			sseWrite(w, "error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})
		}
		w := newWorld(t, []string{"a", "b"}, []behaviour{overloaded, okAnswer("b")}, "", Options{})
		resp, body := w.call("s-fo", true)
		evs := events(body)
		if resp.StatusCode != 200 || count(evs, "message_start") != 1 || !strings.Contains(body, "msg_b") || strings.Contains(body, "msg_a") {
			t.Fatalf("status %d events %v body %q", resp.StatusCode, evs, body)
		}
		if count(evs, "error") != 0 || count(evs, "message_stop") != 1 {
			t.Fatalf("events %v", evs)
		}
		if resp.Header.Get("X-Pool-Member") != "b" || resp.Header.Get("X-Pool-Attempts") != "2" {
			t.Fatalf("headers %v", resp.Header)
		}
		// POOL-8: binding moved to b; a is cooling with class server.
		st := w.pool.Status()
		if len(st.Sessions) != 1 || st.Sessions[0].Bindings["m"] != "b" {
			t.Fatalf("sessions %+v", st.Sessions)
		}
		if a := w.member("a"); a.State != "cooling" || a.CooldownClass != config.ClassServer || a.Failures != 1 {
			t.Fatalf("a = %+v", a)
		}
		if r := st.Recent[len(st.Recent)-1]; r.Member != "b" || r.Failovers != 1 || r.Class != "" {
			t.Fatalf("record %+v", r)
		}
	})
	t.Run("POOL-7/close-after-20-deltas-no-splice-no-fake-stop", func(t *testing.T) {
		partial := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			messageStart(w, "a", nil)
			for i := 0; i < 20; i++ {
				textDelta(w, fmt.Sprintf("d%02d ", i))
			}
			// return: the stream closes without message_stop
		}
		w := newWorld(t, []string{"a", "b"}, []behaviour{partial, okAnswer("b")}, "", Options{})
		resp, body := w.call("s-partial", true)
		evs := events(body)
		if resp.StatusCode != 200 || count(evs, "content_block_delta") != 20 || count(evs, "error") != 1 || count(evs, "message_stop") != 0 {
			t.Fatalf("events %v", evs)
		}
		if evs[len(evs)-1] != "error" || !strings.Contains(body, `"type":"error"`) {
			t.Fatalf("last event must be error: %v", evs)
		}
		if w.mocks["b"].calls() != 0 {
			t.Fatal("b was called after the commit point")
		}
	})
	t.Run("POOL-11/all-fail-before-content-aggregated-error", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{
			statusAnswer(500, nil, `{"type":"error","error":{"type":"api_error","message":"boom a"}}`),
			statusAnswer(529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
		}, "", Options{})
		resp, body := w.call("s-all", true)
		if resp.StatusCode != 529 {
			t.Fatalf("status %d, want 529 (most transient)", resp.StatusCode)
		}
		var doc struct {
			Type  string `json:"type"`
			Error struct {
				Type     string            `json:"type"`
				Message  string            `json:"message"`
				Attempts []neutral.Attempt `json:"attempts"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil || doc.Type != "error" || doc.Error.Type != "overloaded_error" {
			t.Fatalf("body %q (%v)", body, err)
		}
		if len(doc.Error.Attempts) != 2 || doc.Error.Attempts[0].Member != "a" || doc.Error.Attempts[0].Status != 500 ||
			doc.Error.Attempts[1].Member != "b" || doc.Error.Attempts[1].Class != config.ClassServer || doc.Error.Attempts[0].Message != "boom a" {
			t.Fatalf("attempts %+v", doc.Error.Attempts)
		}
		if resp.Header.Get("X-Pool-Attempts") != "2" {
			t.Fatalf("attempts header %q", resp.Header.Get("X-Pool-Attempts"))
		}
		if st := w.pool.Status(); len(st.Sessions) != 0 { // POOL-5: no binding without success
			t.Fatalf("binding recorded for a failed call: %+v", st.Sessions)
		}
	})
	t.Run("POOL-11/status-rank-429-beats-5xx", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{
			statusAnswer(503, nil, `{}`), statusAnswer(429, nil, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`),
		}, "", Options{})
		if resp, _ := w.call("s", false); resp.StatusCode != 429 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	t.Run("POOL-7/non-streaming-fails-over", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{statusAnswer(500, nil, `{}`), okAnswer("b")}, "", Options{})
		resp, body := w.call("s-plain", false)
		if resp.StatusCode != 200 || !strings.Contains(body, "hi from b") || resp.Header.Get("X-Pool-Attempts") != "2" {
			t.Fatalf("%d %q %v", resp.StatusCode, body, resp.Header)
		}
	})
	t.Run("POOL-7/empty-200-fails-over", func(t *testing.T) {
		empty := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			messageStart(w, "a", nil)
			messageEnd(w)
		}
		w := newWorld(t, []string{"a", "b"}, []behaviour{empty, okAnswer("b")}, "", Options{})
		resp, body := w.call("s-empty", true)
		if resp.Header.Get("X-Pool-Member") != "b" || count(events(body), "message_start") != 1 {
			t.Fatalf("%v %q", resp.Header, body)
		}
		if a := w.member("a"); a.CooldownClass != config.ClassEmpty {
			t.Fatalf("a = %+v", a)
		}
	})
	t.Run("POOL-7/first-output-timeout-fails-over", func(t *testing.T) {
		var wa *world
		silent := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			messageStart(w, "a", nil)
			wa.mocks["a"].waitCtx(r)
		}
		wa = newWorld(t, []string{"a", "b"}, []behaviour{silent, okAnswer("b")}, "    first_output_timeout_ms: 300\n", Options{})
		start := time.Now()
		resp, body := wa.call("s-silent", true)
		if resp.Header.Get("X-Pool-Member") != "b" || count(events(body), "message_start") != 1 || strings.Contains(body, "msg_a") {
			t.Fatalf("%v %q", resp.Header, body)
		}
		if el := time.Since(start); el < 250*time.Millisecond || el > 5*time.Second {
			t.Fatalf("elapsed %v", el)
		}
		select {
		case <-wa.mocks["a"].ctxDone:
		case <-time.After(5 * time.Second):
			t.Fatal("a's request was not cancelled")
		}
		if a := wa.member("a"); a.CooldownClass != config.ClassTimeout {
			t.Fatalf("a = %+v", a)
		}
	})
	t.Run("POOL-10/bad-request-returned-as-is-no-failover-no-cooldown", func(t *testing.T) {
		const bad = `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}`
		w := newWorld(t, []string{"a", "b"}, []behaviour{statusAnswer(400, map[string]string{"request-id": "req_1"}, bad), okAnswer("b")}, "", Options{})
		resp, body := w.call("s-bad", true)
		if resp.StatusCode != 400 || body != bad || resp.Header.Get("Request-Id") != "req_1" {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		if w.mocks["b"].calls() != 0 {
			t.Fatal("failover on 400")
		}
		if a := w.member("a"); a.State != "ready" {
			t.Fatalf("a cooling after 400: %+v", a)
		}
	})
	t.Run("POOL-10/model-not-found-fails-over-and-cools-that-member", func(t *testing.T) {
		nf := `{"type":"error","error":{"type":"not_found_error","message":"model: deepseek-x not found"}}`
		w := newWorld(t, []string{"a", "b"}, []behaviour{statusAnswer(404, nil, nf), okAnswer("b")}, "", Options{})
		resp, _ := w.call("s-nf", true)
		if resp.Header.Get("X-Pool-Member") != "b" {
			t.Fatalf("%v", resp.Header)
		}
		if _, cooling := balance.Cooling(w.pool.state.Cooldowns(context.Background(), []string{"a", balance.ModelKey("a", "m")}, w.now.Now()), "a", "m"); !cooling {
			t.Fatal("a/m not cooling")
		}
	})
}

func TestRateLimitAndFailOpen(t *testing.T) {
	t.Run("POOL-10/retry-after-then-POOL-11/fail-open-earliest", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{
			statusAnswer(429, map[string]string{"Retry-After": "4"}, `{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`),
			okAnswer("b"),
		}, "", Options{})
		resp, _ := w.call("s1", true) // a (least bound, first) → 429 → b
		if resp.Header.Get("X-Pool-Member") != "b" {
			t.Fatalf("%v", resp.Header)
		}
		a := w.member("a")
		if a.CooldownClass != config.ClassRateLimit || a.CooldownUntil == nil || !a.CooldownUntil.Equal(w.now.Now().Add(4*time.Second)) {
			t.Fatalf("a = %+v", a)
		}
		w.now.Advance(3 * time.Second)
		for i := 0; i < 3; i++ { // new sessions: a is not tried while cooling
			w.call(fmt.Sprintf("n%d", i), true)
		}
		if w.mocks["a"].calls() != 1 {
			t.Fatalf("a tried during its cooldown: %d calls", w.mocks["a"].calls())
		}
		// b now fails (server, 30 s) → both cooling; a recovers first (t=4 s).
		w.mocks["b"].set(statusAnswer(500, nil, `{}`))
		w.mocks["a"].set(okAnswer("a"))
		// POOL-11: b (the only hot member) fails; the call then fails open
		// onto the cooling a within the same call instead of answering 500.
		resp, body := w.call("n-x", true)
		if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "a" || resp.Header.Get("X-Pool-Attempts") != "2" {
			t.Fatalf("fail-open within the call: %d %v %q", resp.StatusCode, resp.Header, body)
		}
		// a answered, so its cooldown is reset; b is cooling: a alone is tried.
		resp, body = w.call("n-y", true)
		if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "a" || resp.Header.Get("X-Pool-Attempts") != "1" {
			t.Fatalf("after recovery: %d %v %q", resp.StatusCode, resp.Header, body)
		}
	})
}

func TestStrategies(t *testing.T) {
	t.Run("POOL-4/round-robin-rotates-per-call", func(t *testing.T) {
		names, bs := three()
		w := newWorld(t, names, bs, "    strategy: round-robin\n", Options{})
		var got []string
		for i := 0; i < 6; i++ {
			r, _ := w.call("same", true)
			got = append(got, r.Header.Get("X-Pool-Member"))
		}
		if strings.Join(got, "") != "abcabc" {
			t.Fatalf("order %v", got)
		}
	})
	t.Run("POOL-4/failover-first-available", func(t *testing.T) {
		names, bs := three()
		bs[0] = statusAnswer(503, nil, `{}`)
		w := newWorld(t, names, bs, "    strategy: failover\n", Options{})
		var got []string
		for i := 0; i < 3; i++ {
			r, _ := w.call(string(rune('x'+i)), true)
			got = append(got, r.Header.Get("X-Pool-Member"))
		}
		if strings.Join(got, "") != "bbb" || w.mocks["a"].calls() != 1 {
			t.Fatalf("order %v, a calls %d", got, w.mocks["a"].calls())
		}
	})
}
