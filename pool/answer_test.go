package pool

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/status"
)

// bodyAnswer answers every request 200 with ctype and body.
func bodyAnswer(ctype, body string) behaviour {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		if ctype != "" {
			w.Header().Set("Content-Type", ctype)
		}
		w.WriteHeader(200)
		_, _ = io.WriteString(w, body)
	}
}

// TestUnusable200FailsOver: a 200 that is not a usable answer is a member
// failure, like any other failure before the commit point (SPEC POOL-7).
func TestUnusable200FailsOver(t *testing.T) {
	const html = "<html><body>Login to the captive portal</body></html>"
	const message = `{"type":"message","role":"assistant","content":[{"type":"text","text":"json, not a stream"}]}`
	type tc struct {
		name, api, path string
		stream          bool
		bad             behaviour
		class           string
	}
	anth, chat, resp := "/pool/p/v1/messages", "/pool/p/v1/chat/completions", "/pool/p/v1/responses"
	cases := []tc{
		{"POOL-7/stream-answered-with-html", config.APIAnthropic, anth, true, bodyAnswer("text/html", html), config.ClassServer},
		{"POOL-7/stream-answered-with-json", config.APIAnthropic, anth, true, bodyAnswer("application/json", message), config.ClassServer},
		{"POOL-7/chat-stream-answered-with-html", config.APIOpenAI, chat, true, bodyAnswer("text/html; charset=utf-8", html), config.ClassServer},
		{"POOL-7/plain-html", config.APIAnthropic, anth, false, bodyAnswer("text/html", html), config.ClassServer},
		{"POOL-7/plain-error-object-in-200", config.APIAnthropic, anth, false, bodyAnswer("application/json", `{"error":{"type":"rate_limit_error","message":"busy"}}`), config.ClassServer},
		{"POOL-7/plain-empty-object", config.APIAnthropic, anth, false, bodyAnswer("application/json", `{}`), config.ClassServer},
		{"POOL-7/plain-empty-content", config.APIAnthropic, anth, false, bodyAnswer("application/json", `{"type":"message","content":[]}`), config.ClassEmpty},
		{"POOL-7/chat-plain-error-object-in-200", config.APIOpenAI, chat, false, bodyAnswer("application/json", `{"error":{"message":"busy","type":"server_error"}}`), config.ClassServer},
		{"POOL-7/chat-plain-empty-object", config.APIOpenAI, chat, false, bodyAnswer("application/json", `{}`), config.ClassServer},
		{"POOL-7/chat-plain-html", config.APIOpenAI, chat, false, bodyAnswer("text/html", html), config.ClassServer},
		{"POOL-7/responses-plain-failed", config.APIOpenAI, resp, false, bodyAnswer("application/json", `{"id":"r","object":"response","status":"failed","output":[],"error":{"code":"server_error","message":"x"}}`), config.ClassServer},
		{"POOL-7/responses-plain-empty-object", config.APIOpenAI, resp, false, bodyAnswer("application/json", `{}`), config.ClassServer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			good := okAnswer("b")
			body := msgBody("m", c.stream)
			switch c.path {
			case chat:
				good, body = chatOK("b"), chatBody("m", c.stream, "")
			case resp:
				good, body = chatOK("b"), respBody("m", c.stream, "")
			}
			w := newWorldAPI(t, c.api, []string{"a", "b"}, []behaviour{c.bad, good}, nil, "    strategy: failover\n", Options{})
			r, b := w.callAPI(c.path, nil, body)
			if r.StatusCode != 200 || r.Header.Get("X-Pool-Member") != "b" || !strings.Contains(b, "hi from b") {
				t.Fatalf("status %d member %q body %s: want b's answer", r.StatusCode, r.Header.Get("X-Pool-Member"), b)
			}
			if a := w.member("a"); a.Failures != 1 || a.CooldownClass != c.class {
				t.Fatalf("a = %+v, want one %s failure", a, c.class)
			}
		})
	}
	t.Run("POOL-7/usable-answers-still-pass", func(t *testing.T) {
		for _, good := range []string{message, `{"id":"m","role":"assistant","content":[{"type":"text","text":"no type field"}]}`} {
			w := newWorld(t, []string{"a"}, []behaviour{bodyAnswer("application/json", good)}, "", Options{})
			r, b := w.call("s", false)
			if r.StatusCode != 200 || b != good {
				t.Fatalf("status %d body %s", r.StatusCode, b)
			}
		}
	})
	t.Run("POOL-7/count-tokens-error-object-fails-over", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{bodyAnswer("application/json", `{"type":"error","error":{"type":"api_error","message":"x"}}`), okAnswer("b")}, "    strategy: failover\n", Options{})
		r, b := w.callAPI("/pool/p/v1/messages/count_tokens", nil, msgBody("m", false))
		if r.StatusCode != 200 || !strings.Contains(b, "input_tokens") {
			t.Fatalf("status %d body %s", r.StatusCode, b)
		}
	})
}

// TestMemberCountsPerPool: a channel in two pools shows each pool's own
// successes and failures; the cooldown state stays the channel's (POOL-13).
func TestMemberCountsPerPool(t *testing.T) {
	w := newWorld(t, []string{"a"}, []behaviour{okAnswer("a")}, "", Options{})
	cfg, _ := w.pool.config()
	a := cfg.Channel("a")
	y := "channels:\n  a: {api: anthropic, base_url: " + a.BaseURL + ", api_key: k-aaaa}\npools:\n  p: {members: [a]}\n  q: {members: [a]}\n"
	cfg2, err := config.ParseConfig([]byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	w.pool.Reload(cfg2)
	for i := 0; i < 3; i++ {
		if r, b := w.callAPI("/pool/p/v1/messages", nil, msgBody("m", false)); r.StatusCode != 200 {
			t.Fatalf("p: %d %s", r.StatusCode, b)
		}
	}
	w.mocks["a"].set(statusAnswer(500, nil, `{"type":"error","error":{"type":"api_error","message":"x"}}`))
	if r, _ := w.callAPI("/pool/q/v1/messages", nil, msgBody("m", false)); r.StatusCode != 500 {
		t.Fatalf("q: %d", r.StatusCode)
	}
	got := map[string]status.MemberStatus{}
	for _, ps := range w.pool.Status().Pools {
		got[ps.ID] = ps.Members[0]
	}
	t.Run("POOL-13/successes-failures-per-pool", func(t *testing.T) {
		if p, q := got["p"], got["q"]; p.Successes != 3 || p.Failures != 0 || q.Successes != 0 || q.Failures != 1 {
			t.Fatalf("p %+v q %+v", p, q)
		}
	})
	t.Run("POOL-10/cooldown-stays-per-channel", func(t *testing.T) {
		if p, q := got["p"], got["q"]; p.State != "cooling" || q.State != "cooling" {
			t.Fatalf("p %+v q %+v", p, q)
		}
	})
}

// TestClearMessages: errors say what is wrong (SPEC POOL-7, POOL-10, POOL-11).
func TestClearMessages(t *testing.T) {
	stall := func(w http.ResponseWriter, r *http.Request, _ int) {
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(recordedBody(r), &body)
		if body.Stream {
			sseHead(w)
			messageStart(w, "a", nil)
		}
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
	w := newWorld(t, []string{"a"}, []behaviour{stall}, "    first_output_timeout_ms: 300\n    response_timeout_ms: 300\n", Options{})
	for _, tc := range []struct{ name, path, body, want string }{
		{"POOL-2/model-number", "/pool/p/v1/messages", `{"model": 5, "max_tokens": 5, "messages": []}`, "model must be a string"},
		{"POOL-2/model-object", "/pool/p/v1/messages", `{"model": {"id": "m"}, "messages": []}`, "model must be a string"},
		{"POOL-7/stream-string", "/pool/p/v1/messages", `{"model": "m", "stream": "yes", "messages": []}`, "stream must be a boolean"},
		{"POOL-7/stream-number", "/pool/p/v1/messages", `{"model": "m", "stream": 1, "messages": []}`, "stream must be a boolean"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, b := w.callAPI(tc.path, nil, tc.body)
			if r.StatusCode != 400 || !strings.Contains(b, tc.want) {
				t.Fatalf("status %d body %s, want 400 %q", r.StatusCode, b, tc.want)
			}
		})
	}
	t.Run("POOL-7/first-output-timeout-named", func(t *testing.T) {
		r, b := w.call("s1", true)
		if r.StatusCode != 504 || !strings.Contains(b, "no output within first_output_timeout_ms (300 ms)") || strings.Contains(b, "context canceled") {
			t.Fatalf("status %d body %s", r.StatusCode, b)
		}
	})
	t.Run("POOL-7/response-timeout-named", func(t *testing.T) {
		w.pool.state.Succeed(context.Background(), "a")
		r, b := w.call("s2", false)
		if r.StatusCode != 504 || !strings.Contains(b, "no answer within response_timeout_ms (300 ms)") || strings.Contains(b, "deadline exceeded") {
			t.Fatalf("status %d body %s", r.StatusCode, b)
		}
	})
	t.Run("POOL-11/529-status-text", func(t *testing.T) {
		over := statusAnswer(529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		w2 := newWorld(t, []string{"a", "b"}, []behaviour{over, over}, "", Options{})
		r, b := w2.call("s", false)
		if r.StatusCode != 529 || r.Status != "529 Overloaded" || !strings.Contains(b, "overloaded_error") || r.Header.Get("X-Pool-Attempts") != "2" {
			t.Fatalf("status line %q headers %v body %s", r.Status, r.Header, b)
		}
	})
}

// TestHostileMemberErrorBodies: a member that sends an error status and
// then stalls in its body, or sends an endless or gzip-bomb error body,
// costs one bounded attempt and a failover, never a hang (POOL-10,
// POOL-17).
func TestHostileMemberErrorBodies(t *testing.T) {
	stallBody := func(code int) behaviour {
		return func(w http.ResponseWriter, r *http.Request, _ int) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(code)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}
	endless := func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"`)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for i := 0; i < 1<<11 && r.Context().Err() == nil; i++ { // at most 128 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
	for _, tc := range []struct {
		name   string
		b      behaviour
		stream bool
	}{
		{"POOL-10/529-head-then-stalled-body-stream", stallBody(529), true},
		{"POOL-10/529-head-then-stalled-body-non-stream", stallBody(529), false},
		{"POOL-10/400-head-then-stalled-body-stream", stallBody(400), true},
		{"POOL-17/endless-529-body-stream", endless, true},
		{"POOL-17/endless-529-body-non-stream", endless, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []string{"a", "b"}, []behaviour{tc.b, okAnswer("b")}, "    strategy: failover\n    first_output_timeout_ms: 500\n    response_timeout_ms: 500\n", Options{})
			start := time.Now()
			resp, body := w.call("s1", tc.stream)
			d := time.Since(start)
			if d > 8*time.Second {
				t.Fatalf("took %v", d)
			}
			if resp.StatusCode != 200 || !strings.Contains(body, "msg_b") {
				t.Fatalf("want b's answer after the failover: %d %.300s", resp.StatusCode, body)
			}
		})
	}
}

// TestAggregateStatusNeverSuccess: members that answer 200 with something
// the pool cannot use (a JSON document to a streaming request) failed; the
// aggregated error (SPEC POOL-11) must carry an error status, never the
// members' 200, or clients read the error document as an answer and do not
// retry.
func TestAggregateStatusNeverSuccess(t *testing.T) {
	jsonAnswer := func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}]}`)
	}
	for _, tc := range []struct {
		name string
		b    []behaviour
		want int
	}{
		{"POOL-11/unusable-200-answers-are-502", []behaviour{jsonAnswer, jsonAnswer}, 502},
		{"POOL-11/unusable-200-then-401-is-502-the-more-transient", []behaviour{jsonAnswer, statusAnswer(401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)}, 502},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []string{"a", "b"}, tc.b, "    strategy: failover\n", Options{})
			resp, body := w.call("s1", true)
			if resp.StatusCode != tc.want || !strings.Contains(body, "all 2 attempted members failed") {
				t.Fatalf("client got %d (want %d): %.300s", resp.StatusCode, tc.want, body)
			}
		})
	}
}
