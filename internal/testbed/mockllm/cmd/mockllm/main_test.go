package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// post sends body to srv's Anthropic Messages path and returns the status
// and the answer.
func post(t *testing.T, srv *httptest.Server, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The flags a real-agent failover test needs (SPEC POOL-7, POOL-18): two
// processes started with -strict -thinking each sign their own reasoning
// and refuse the other's, and -fail-from takes a channel down mid-session.
func TestFlags(t *testing.T) {
	defer goleak.VerifyNone(t)
	flags := options{api: "anthropic", strict: true, thinking: true, failStatus: 529, reply: "ok"}
	a, b := httptest.NewServer(flags.channel()), httptest.NewServer(flags.channel())
	defer a.Close()
	defer b.Close()
	const thinkingOn = `"thinking":{"type":"enabled","budget_tokens":1024}`
	first := `{"model":"m","max_tokens":2048,` + thinkingOn + `,"messages":[{"role":"user","content":"hi"}]}`

	var answer struct {
		Content []json.RawMessage `json:"content"`
	}
	t.Run("POOL-18/thinking-answer-signed-by-its-process", func(t *testing.T) {
		st, ans := post(t, a, first)
		if st != 200 || json.Unmarshal([]byte(ans), &answer) != nil || len(answer.Content) != 2 ||
			!strings.Contains(string(answer.Content[0]), `"type":"thinking"`) || !strings.Contains(string(answer.Content[1]), `"text":"ok"`) {
			t.Fatalf("%d %s, want a signed thinking block, then the reply", st, ans)
		}
		if st, ans := post(t, a, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`); st != 200 || strings.Contains(ans, `"thinking"`) {
			t.Fatalf("a call that asks for no thinking: %d %s", st, ans)
		}
	})
	if t.Failed() {
		return
	}
	next := `{"model":"m","max_tokens":2048,` + thinkingOn + `,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[` +
		string(answer.Content[0]) + `,` + string(answer.Content[1]) + `]},{"role":"user","content":"again"}]}`
	t.Run("POOL-18/strict-refuses-the-other-process-signature", func(t *testing.T) {
		if st, ans := post(t, b, next); st != 400 || !strings.Contains(ans, "messages.1.content.0: Invalid `signature` in `thinking` block") {
			t.Fatalf("b given a's thinking: %d %s, want the provider's 400", st, ans)
		}
		if st, ans := post(t, a, next); st != 200 {
			t.Fatalf("a given its own thinking: %d %s", st, ans)
		}
	})
	t.Run("POOL-7/fail-from-nth-model-call-on", func(t *testing.T) {
		o := flags
		o.failFrom = 2
		srv := httptest.NewServer(o.channel())
		defer srv.Close()
		for i, want := range []int{200, 529, 529} {
			if st, ans := post(t, srv, first); st != want {
				t.Fatalf("model call %d: %d %s, want %d", i+1, st, ans, want)
			}
		}
	})
}
