package pool_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// thinking sends the preamble, then pings every 100 ms for d (a member that
// queues or thinks long before its first visible output), then calls then.
func thinking(who string, d time.Duration, then func(w http.ResponseWriter)) func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
	return func(w http.ResponseWriter, r *http.Request, _ int, _ []byte) {
		streamHead(w)
		preamble(w, who)
		end := time.After(d)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-end:
				then(w)
				return
			case <-tick.C:
				ev(w, "ping", `{"type":"ping"}`)
			}
		}
	}
}

// firstBytes posts a streamed request and returns the time until the
// response head and the first body byte arrived, and the whole body.
func firstBytes(t *testing.T, w *rworld, path, body string) (head, first time.Duration, status int, all string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	resp := w.post(ctx, path, "s1", body)
	defer resp.Body.Close()
	head = time.Since(start)
	br := bufio.NewReader(resp.Body)
	if _, err := br.Peek(1); err != nil {
		t.Fatalf("no body byte: %v", err)
	}
	first = time.Since(start)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return head, first, resp.StatusCode, string(rest)
}

// TestPreCommitKeepalive: after keepalive_hold_ms without visible output the
// client gets the response head and the API's own keep-alives; failover
// stays silent until the first visible output; one coherent stream (SPEC
// POOL-7b).
func TestPreCommitKeepalive(t *testing.T) {
	const extra = "    strategy: failover\n    keepalive_hold_ms: 200\n"
	t.Run("POOL-7b/pings-then-content-client-sees-bytes-within-hold", func(t *testing.T) {
		w := newRWorld(t, rconf{poolExtra: extra}, []string{"a", "b"},
			thinking("a", 2500*time.Millisecond, func(w http.ResponseWriter) { content(w, "a") }), okChannel("b"))
		head, first, status, body := firstBytes(t, w, "/pool/p/v1/messages", anthropicBody(true))
		if head > 1500*time.Millisecond || first > 1500*time.Millisecond {
			t.Fatalf("head after %v, first byte after %v: want well before the content at 2.5 s", head, first)
		}
		names := eventNames(body)
		if status != 200 || countOf(names, "message_start") != 1 || !strings.Contains(body, "hi from a") || names[len(names)-1] != "message_stop" {
			t.Fatalf("status %d events %v\n%s", status, names, body)
		}
		if w.ch["b"].calls() != 0 {
			t.Fatal("b was called")
		}
	})
	t.Run("POOL-7b/member-fails-after-hold-next-answers-one-coherent-stream", func(t *testing.T) {
		w := newRWorld(t, rconf{poolExtra: extra}, []string{"a", "b"},
			thinking("a", 1500*time.Millisecond, func(w http.ResponseWriter) {
				ev(w, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			}), okChannel("b"))
		head, _, status, body := firstBytes(t, w, "/pool/p/v1/messages", anthropicBody(true))
		if head > time.Second {
			t.Fatalf("head after %v", head)
		}
		names := eventNames(body)
		if status != 200 || countOf(names, "message_start") != 1 || !strings.Contains(body, "msg_b") || strings.Contains(body, "msg_a") ||
			!strings.Contains(body, "hi from b") || countOf(names, "error") != 0 {
			t.Fatalf("status %d events %v\n%s", status, names, body)
		}
		if m := w.member("a"); m.CooldownClass != "server" {
			t.Fatalf("a: %+v", m)
		}
	})
	t.Run("POOL-7b/all-fail-after-head-api-error-event", func(t *testing.T) {
		fail := thinking("x", 600*time.Millisecond, func(w http.ResponseWriter) {
			ev(w, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		})
		w := newRWorld(t, rconf{poolExtra: extra}, []string{"a", "b"}, fail, fail)
		_, _, status, body := firstBytes(t, w, "/pool/p/v1/messages", anthropicBody(true))
		names := eventNames(body)
		if status != 200 || countOf(names, "error") != 1 || names[len(names)-1] != "error" || countOf(names, "message_start") != 0 ||
			!strings.Contains(body, "overloaded_error") {
			t.Fatalf("status %d events %v\n%s", status, names, body)
		}
	})
	t.Run("POOL-7b/non-streamed-call-writes-nothing-before-its-answer", func(t *testing.T) {
		// Past the hold, a non-streamed call still gets its answer's own
		// status and body as the first bytes: no early head, no whitespace
		// (docs/POOL.md, "Non-streamed calls and idle timeouts").
		late := func(w http.ResponseWriter, r *http.Request, _ int, _ []byte) {
			select {
			case <-time.After(600 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too large"}}`)
		}
		w := newRWorld(t, rconf{poolExtra: extra}, []string{"a"}, late)
		head, _, status, body := firstBytes(t, w, "/pool/p/v1/messages", anthropicBody(false))
		if status != 400 || head < 500*time.Millisecond || !strings.HasPrefix(body, `{"type":"error"`) {
			t.Fatalf("status %d after %v, body %q", status, head, body)
		}
	})
	t.Run("POOL-7b/chat-keepalive-comments", func(t *testing.T) {
		chat := func(w http.ResponseWriter, r *http.Request, _ int, _ []byte) {
			streamHead(w)
			io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-time.After(1500 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
			io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		}
		w := newRWorld(t, rconf{api: "openai", poolExtra: extra}, []string{"a"}, chat)
		head, first, status, body := firstBytes(t, w, "/pool/p/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		if head > time.Second || first > time.Second || status != 200 {
			t.Fatalf("head %v first %v status %d", head, first, status)
		}
		if !strings.HasPrefix(body, ":") || strings.Count(body, `"role":"assistant"`) != 1 || !strings.HasSuffix(body, "data: [DONE]\n\n") {
			t.Fatalf("body %q", body)
		}
	})
}
