package pool

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

const chatPath = "/pool/p/v1/chat/completions"

func openaiWorld(t *testing.T, bs []behaviour, poolExtra string, opts Options) *world {
	names := []string{"a", "b", "c"}[:len(bs)]
	return newWorldAPI(t, config.APIOpenAI, names, bs, nil, poolExtra, opts)
}

// roleOnly counts chunks whose delta has a role and no content.
func roleOnly(blocks []block) int {
	n := 0
	for _, b := range blocks {
		var v struct {
			Choices []struct {
				Delta map[string]any `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(b.data), &v) == nil && len(v.Choices) > 0 {
			d := v.Choices[0].Delta
			if d["role"] != nil && (d["content"] == nil || d["content"] == "") {
				n++
			}
		}
	}
	return n
}

func dataCount(blocks []block, substr string) int {
	n := 0
	for _, b := range blocks {
		if strings.Contains(b.data, substr) {
			n++
		}
	}
	return n
}

func TestChatFailover(t *testing.T) {
	hdr := map[string]string{"X-Session-Id": "chat-s"}
	t.Run("POOL-7/chat-error-before-content-next-member-one-role-chunk", func(t *testing.T) {
		failing := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			chatChunk(w, "a", map[string]any{"role": "assistant", "content": ""}, nil)
			fmt.Fprint(w, ": keepalive\n\n")
			sseData(w, map[string]any{"error": map[string]any{"message": "upstream overloaded", "type": "server_error", "code": "overloaded"}})
		}
		w := openaiWorld(t, []behaviour{failing, chatOK("b")}, "", Options{})
		resp, body := w.callAPI(chatPath, hdr, chatBody("m", true, ""))
		bl := sseBlocks(body)
		if resp.StatusCode != 200 || roleOnly(bl) != 1 || dataCount(bl, "chatcmpl-a") != 0 || !strings.Contains(body, "hi from b") {
			t.Fatalf("status %d body %q", resp.StatusCode, body)
		}
		if dataCount(bl, `"error"`) != 0 || dataCount(bl, "[DONE]") != 1 || strings.Contains(body, "keepalive") {
			t.Fatalf("body %q", body)
		}
		if resp.Header.Get("X-Pool-Member") != "b" || resp.Header.Get("X-Pool-Attempts") != "2" || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("headers %v", resp.Header)
		}
		if a := w.member("a"); a.State != "cooling" || a.CooldownClass != config.ClassServer {
			t.Fatalf("a = %+v", a)
		}
		if st := w.pool.Status(); len(st.Sessions) != 1 || st.Sessions[0].Bindings["m"] != "b" { // POOL-8
			t.Fatalf("sessions %+v", st.Sessions)
		}
	})
	t.Run("POOL-7/chat-comments-only-then-silence-is-no-output", func(t *testing.T) {
		silent := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			chatChunk(w, "a", map[string]any{"role": "assistant"}, nil)
			fmt.Fprint(w, ": ping\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}
		w := openaiWorld(t, []behaviour{silent, chatOK("b")}, "    first_output_timeout_ms: 300\n", Options{})
		resp, body := w.callAPI(chatPath, hdr, chatBody("m", true, ""))
		if resp.Header.Get("X-Pool-Member") != "b" || roleOnly(sseBlocks(body)) != 1 {
			t.Fatalf("%v %q", resp.Header, body)
		}
		if a := w.member("a"); a.CooldownClass != config.ClassTimeout {
			t.Fatalf("a = %+v", a)
		}
	})
	t.Run("POOL-7/chat-after-content-error-chunk-no-splice-no-done", func(t *testing.T) {
		partial := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			chatChunk(w, "a", map[string]any{"role": "assistant", "content": ""}, nil)
			for i := 0; i < 5; i++ {
				chatChunk(w, "a", map[string]any{"content": fmt.Sprintf("d%d ", i)}, nil)
			}
		}
		w := openaiWorld(t, []behaviour{partial, chatOK("b")}, "", Options{})
		resp, body := w.callAPI(chatPath, hdr, chatBody("m", true, ""))
		bl := sseBlocks(body)
		if resp.StatusCode != 200 || dataCount(bl, `"content":"d`) != 5 || dataCount(bl, "[DONE]") != 0 {
			t.Fatalf("body %q", body)
		}
		last := bl[len(bl)-1]
		var e struct {
			Error struct{ Message, Type, Code string } `json:"error"`
		}
		if json.Unmarshal([]byte(last.data), &e) != nil || e.Error.Message == "" || e.Error.Type == "" || e.Error.Code == "" {
			t.Fatalf("last event is not an OpenAI error chunk: %q", last.data)
		}
		if w.mocks["b"].calls() != 0 {
			t.Fatal("b called after the commit point")
		}
	})
	t.Run("POOL-7/chat-upstream-error-chunk-after-content-passed-through", func(t *testing.T) {
		partial := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			chatChunk(w, "a", map[string]any{"content": "half"}, nil)
			sseData(w, map[string]any{"error": map[string]any{"message": "boom", "type": "server_error"}})
		}
		w := openaiWorld(t, []behaviour{partial, chatOK("b")}, "", Options{})
		_, body := w.callAPI(chatPath, hdr, chatBody("m", true, ""))
		bl := sseBlocks(body)
		if len(bl) != 2 || !strings.Contains(bl[1].data, "boom") || w.mocks["b"].calls() != 0 {
			t.Fatalf("body %q", body)
		}
	})
	t.Run("POOL-7/chat-finish-without-done-is-a-clean-end", func(t *testing.T) {
		noDone := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			chatChunk(w, "a", map[string]any{"content": "ok"}, nil)
			chatChunk(w, "a", map[string]any{}, "stop")
		}
		w := openaiWorld(t, []behaviour{noDone}, "", Options{})
		_, body := w.callAPI(chatPath, hdr, chatBody("m", true, ""))
		if bl := sseBlocks(body); len(bl) != 2 || dataCount(bl, `"error"`) != 0 {
			t.Fatalf("body %q", body)
		}
		if r := w.pool.Status().Recent[0]; r.Class != "" || r.Member != "a" {
			t.Fatalf("record %+v", r)
		}
	})
	t.Run("POOL-11/chat-all-failed-one-error-listing-attempts", func(t *testing.T) {
		w := openaiWorld(t, []behaviour{
			statusAnswer(500, nil, `{"error":{"message":"boom a","type":"server_error","code":null}}`),
			statusAnswer(429, nil, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`),
		}, "", Options{})
		for _, stream := range []bool{true, false} {
			resp, body := w.callAPI(chatPath, map[string]string{"X-Session-Id": fmt.Sprint("all-", stream)}, chatBody("m", stream, ""))
			var doc struct {
				Error struct {
					Message, Type, Code string
					Attempts            []neutral.Attempt
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &doc); err != nil || resp.StatusCode != 429 {
				t.Fatalf("stream=%v %d %q", stream, resp.StatusCode, body)
			}
			if len(doc.Error.Attempts) != 2 || doc.Error.Attempts[0].Class != config.ClassServer || doc.Error.Attempts[1].Class != config.ClassRateLimit ||
				doc.Error.Type != "rate_limit_error" || doc.Error.Code != "rate_limit_exceeded" || !strings.Contains(doc.Error.Message, "a: server (500)") {
				t.Fatalf("stream=%v doc %+v", stream, doc)
			}
		}
	})
	t.Run("POOL-7/chat-non-streaming-fails-over-on-empty", func(t *testing.T) {
		empty := statusAnswer(200, nil, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`)
		w := openaiWorld(t, []behaviour{empty, chatOK("b")}, "", Options{})
		resp, body := w.callAPI(chatPath, hdr, chatBody("m", false, ""))
		if resp.StatusCode != 200 || !strings.Contains(body, "hi from b") || w.member("a").CooldownClass != config.ClassEmpty {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
	})
	t.Run("POOL-10/chat-bad-request-returned-as-is", func(t *testing.T) {
		bad := statusAnswer(400, nil, `{"error":{"message":"messages: too long","type":"invalid_request_error","code":"context_length_exceeded"}}`)
		w := openaiWorld(t, []behaviour{bad, chatOK("b")}, "", Options{})
		resp, body := w.callAPI(chatPath, hdr, chatBody("m", true, ""))
		if resp.StatusCode != 400 || !strings.Contains(body, "too long") || w.mocks["b"].calls() != 0 || w.member("a").State != "ready" {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
	})
	t.Run("POOL-10/chat-model-not-found-code-fails-over", func(t *testing.T) {
		nf := statusAnswer(400, nil, `{"error":{"message":"The model x does not exist","type":"invalid_request_error","code":"model_not_found"}}`)
		w := openaiWorld(t, []behaviour{nf, chatOK("b")}, "", Options{})
		resp, _ := w.callAPI(chatPath, hdr, chatBody("m", true, ""))
		if resp.Header.Get("X-Pool-Member") != "b" {
			t.Fatalf("%v", resp.Header)
		}
	})
}

func TestChatRequest(t *testing.T) {
	t.Run("POOL-2/bearer-key-model-rewritten-token-not-forwarded", func(t *testing.T) {
		w := newWorldAPI(t, config.APIOpenAI, []string{"a"}, []behaviour{chatOK("a")}, nil,
			"    models: [{id: m, targets: {a: real-a}}]\n", Options{Token: "local-token"})
		resp, _ := w.callAPI(chatPath, map[string]string{"Authorization": "Bearer local-token"}, chatBody("m", true, ""))
		if resp.StatusCode != 200 {
			t.Fatalf("%d", resp.StatusCode)
		}
		got := w.mocks["a"].req(0)
		if got.Path != "/v1/chat/completions" || got.Header.Get("Authorization") != "Bearer "+secretFor("a") || got.Header.Get("X-Api-Key") != "" || got.Body["model"] != "real-a" {
			t.Fatalf("upstream saw %s %v %v", got.Path, got.Header, got.Body)
		}
	})
	t.Run("POOL-20/openai-pool-401-in-openai-shape", func(t *testing.T) {
		w := openaiWorld(t, []behaviour{chatOK("a")}, "", Options{Token: "local-token"})
		resp, body := w.callAPI(chatPath, map[string]string{"Authorization": "Bearer wrong"}, chatBody("m", true, ""))
		var doc struct {
			Error struct{ Message, Type, Code string } `json:"error"`
		}
		if resp.StatusCode != 401 || json.Unmarshal([]byte(body), &doc) != nil || doc.Error.Type != "authentication_error" || w.mocks["a"].calls() != 0 {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
	})
	t.Run("POOL-5/prompt-cache-key-and-agent-headers-keep-sessions-sticky", func(t *testing.T) {
		w := openaiWorld(t, []behaviour{chatOK("a"), chatOK("b")}, "", Options{})
		type id struct {
			hdr   map[string]string
			extra string
		}
		ids := []id{
			{nil, `"prompt_cache_key": "pck-1", `},
			{map[string]string{"session-id": "codex-2"}, ""},
			{map[string]string{"session_id": "codex-3"}, ""},
			{map[string]string{"x-session-affinity": "oc-4"}, ""},
			{map[string]string{"x-opencode-session": "oc-5"}, ""},
			{map[string]string{"X-Qwen-Code-Session-Id": "qwen-6"}, ""},
			{map[string]string{"X-Amp-Thread-Id": "amp-7"}, ""},
		}
		want := []string{"pck-1", "codex-2", "codex-3", "oc-4", "oc-5", "qwen-6", "amp-7"}
		first := map[int]string{}
		for round := 0; round < 3; round++ {
			for i, x := range ids {
				resp, _ := w.callAPI(chatPath, x.hdr, chatBody("m", round%2 == 0, x.extra))
				if resp.Header.Get("X-Pool-Session") != balance.SessionHash(want[i]) {
					t.Fatalf("%d: session header %q, want hash of %q", i, resp.Header.Get("X-Pool-Session"), want[i])
				}
				m := resp.Header.Get("X-Pool-Member")
				if round == 0 {
					first[i] = m
				} else if m != first[i] {
					t.Fatalf("%d moved %s → %s", i, first[i], m)
				}
			}
		}
		if a, b := w.member("a").BoundSessions, w.member("b").BoundSessions; a+b != 7 || a < 3 || b < 3 {
			t.Fatalf("bound a=%d b=%d", a, b)
		}
	})
	t.Run("POOL-13b/chat-cache-hit-ratio-from-usage", func(t *testing.T) {
		w := openaiWorld(t, []behaviour{chatOK("a")}, "", Options{})
		w.callAPI(chatPath, map[string]string{"X-Session-Id": "cache"}, chatBody("m", true, `"stream_options": {"include_usage": true}, `))
		w.callAPI(chatPath, map[string]string{"X-Session-Id": "cache"}, chatBody("m", false, ""))
		c := w.member("a").Cache
		if c.CacheReadTokens != 60 || c.InputTokens != 20 || c.HitRatio != 0.75 {
			t.Fatalf("cache %+v", c)
		}
	})
}

func TestOpenAIPing(t *testing.T) {
	t.Run("POOL-7/openai-own-ping-is-a-comment", func(t *testing.T) {
		release := make(chan struct{})
		slow := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			chatChunk(w, "a", map[string]any{"content": "first"}, nil)
			select {
			case <-release:
			case <-time.After(5 * time.Second):
			}
			chatChunk(w, "a", map[string]any{}, "stop")
			chatDone(w)
		}
		w := openaiWorld(t, []behaviour{slow}, "", Options{PingInterval: 50 * time.Millisecond})
		resp := w.do(t.Context(), chatPath, nil, chatBody("m", true, ""))
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		var got strings.Builder
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(got.String(), ": ping\n\n") && time.Now().Before(deadline) {
			n, err := resp.Body.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				break
			}
		}
		close(release)
		if !strings.Contains(got.String(), "first") || !strings.Contains(got.String(), ": ping\n\n") || strings.Contains(got.String(), "event: ping") {
			t.Fatalf("got %q", got.String())
		}
	})
}
