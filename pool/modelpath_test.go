package pool

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// geminiOK answers like a healthy Gemini member: a generateContent answer,
// or one SSE chunk of it when asked to stream, or a countTokens count.
func geminiOK(w http.ResponseWriter, r *http.Request, _ int) {
	const answer = `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1}}`
	switch {
	case strings.HasSuffix(r.URL.Path, ":countTokens"):
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"totalTokens":7}`)
	case strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
		sseHead(w)
		_, _ = io.WriteString(w, "data: "+answer+"\n\n")
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	}
}

const geminiBody = `{"contents":[{"role":"user","parts":[{"text":"say ok"}]}]}`

// TestModelIDIsOnePathSegment: a pool without models: accepts every id and
// sends it unchanged as a model (SPEC POOL-1, POOL-2); in a Gemini member's
// path the id is one escaped segment, never path structure that would reach
// another endpoint of the member with the member's key.
func TestModelIDIsOnePathSegment(t *testing.T) {
	w := newWorldAPI(t, config.APIGemini, []string{"g"}, []behaviour{geminiOK}, nil, "", Options{})
	const evil = "../../v1beta/cachedContents?x="
	// segment is how a model id is written in the member's request line.
	segment := url.PathEscape(evil)
	for _, tc := range []struct {
		name, path, body, method string
	}{
		{"POOL-1/chat-client-model-id-is-one-gemini-path-segment", "/pool/p/v1/chat/completions",
			fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"say ok"}]}`, evil), "generateContent"},
		{"POOL-1/anthropic-client-model-id-is-one-gemini-path-segment", "/pool/p/v1/messages", msgBody(evil, false), "generateContent"},
		{"POOL-1/responses-client-model-id-is-one-gemini-path-segment", "/pool/p/v1/responses",
			fmt.Sprintf(`{"model":%q,"input":"say ok"}`, evil), "generateContent"},
		{"POOL-1/gemini-client-escaped-slashes-stay-in-the-model-segment", "/pool/p/v1beta/models/..%2F..%2Fv1beta%2FcachedContents%3Fx=:generateContent",
			geminiBody, "generateContent"},
		{"POOL-1/gemini-client-stream-escaped-slashes-stay-in-the-model-segment", "/pool/p/v1beta/models/..%2F..%2Fv1beta%2FcachedContents%3Fx=:streamGenerateContent?alt=sse",
			geminiBody, "streamGenerateContent"},
		{"POOL-1/gemini-client-count-tokens-escaped-slashes-stay-in-the-model-segment", "/pool/p/v1beta/models/..%2F..%2Fv1beta%2FcachedContents%3Fx=:countTokens",
			geminiBody, "countTokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := w.mocks["g"].calls()
			st, b := w.rawDo("POST", tc.path, "", map[string]string{"Content-Type": "application/json"}, tc.body)
			if st != 200 {
				t.Fatalf("status %d %s", st, b)
			}
			if n := w.mocks["g"].calls(); n != before+1 {
				t.Fatalf("member calls %d, want %d", n, before+1)
			}
			rec := w.mocks["g"].req(before)
			target, _, _ := strings.Cut(rec.Target, "?")
			if want := "/v1beta/models/" + segment + ":" + tc.method; target != want {
				t.Fatalf("member request-target %q, want path %q", rec.Target, want)
			}
			if want := "/v1beta/models/" + evil + ":" + tc.method; rec.Path != want {
				t.Fatalf("member decoded path %q, want %q (the id unchanged, as a model)", rec.Path, want)
			}
		})
	}
	t.Run("POOL-1/model-id-keeps-colon-and-plain-ids-unescaped", func(t *testing.T) {
		before := w.mocks["g"].calls()
		st, b := w.rawDo("POST", "/pool/p/v1/chat/completions", "", map[string]string{"Content-Type": "application/json"},
			`{"model":"gemini-2.5-pro:beta@v1","messages":[{"role":"user","content":"say ok"}]}`)
		if st != 200 {
			t.Fatalf("status %d %s", st, b)
		}
		if got := w.mocks["g"].req(before).Target; got != "/v1beta/models/gemini-2.5-pro:beta@v1:generateContent" {
			t.Fatalf("member request-target %q", got)
		}
	})
	for _, tc := range []struct{ name, path, body string }{
		{"POOL-1/dot-dot-model-id-refused", "/pool/p/v1/chat/completions", `{"model":"..","messages":[{"role":"user","content":"x"}]}`},
		{"POOL-1/dot-model-id-refused", "/pool/p/v1/messages", msgBody(".", false)},
		{"POOL-1/control-character-model-id-refused", "/pool/p/v1/chat/completions", `{"model":"a\nb","messages":[{"role":"user","content":"x"}]}`},
		{"POOL-1/nul-model-id-refused", "/pool/p/v1/responses", `{"model":"a\u0000b","input":"x"}`},
		{"POOL-1/gemini-client-dot-dot-model-refused", "/pool/p/v1beta/models/%2E%2E:generateContent", geminiBody},
		{"POOL-1/gemini-client-control-character-model-refused", "/pool/p/v1beta/models/a%0Db:generateContent", geminiBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := w.mocks["g"].calls()
			st, b := w.rawDo("POST", tc.path, "", map[string]string{"Content-Type": "application/json"}, tc.body)
			if st != 400 || !strings.Contains(b, "model") {
				t.Fatalf("status %d %s, want 400 naming the model", st, b)
			}
			if n := w.mocks["g"].calls(); n != before {
				t.Fatalf("a refused id reached the member (%d calls)", n-before)
			}
		})
	}
}
