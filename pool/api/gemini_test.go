package api

import (
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/gemini"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

func TestGeminiEndpoints(t *testing.T) {
	cases := []struct {
		name, method, path string
		ok                 bool
		want               neutral.Endpoint
	}{
		{"POOL-21/gemini-generate", "POST", "/v1beta/models/gemini-2.5-pro:generateContent", true, neutral.Endpoint{Kind: neutral.EpGenerate, Upstream: "/v1beta/models/gemini-2.5-pro:generateContent", Model: "gemini-2.5-pro"}},
		{"POOL-21/gemini-stream", "POST", "/v1beta/models/m:streamGenerateContent", true, neutral.Endpoint{Kind: neutral.EpGenerate, Upstream: "/v1beta/models/m:streamGenerateContent", Model: "m", Stream: true}},
		{"POOL-21/gemini-count-tokens", "POST", "/v1beta/models/m:countTokens", true, neutral.Endpoint{Kind: neutral.EpCountTokens, Upstream: "/v1beta/models/m:countTokens", Model: "m"}},
		{"POOL-21/gemini-models", "GET", "/v1beta/models", true, neutral.Endpoint{Kind: neutral.EpModels}},
		{"POOL-21/gemini-unknown-verb", "POST", "/v1beta/models/m:embedContent", false, neutral.Endpoint{}},
		{"POOL-21/gemini-get-generate", "GET", "/v1beta/models/m:generateContent", false, neutral.Endpoint{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ep, ok := gemini.Flavour{}.Endpoint(c.method, c.path)
			if ok != c.ok || ep != c.want {
				t.Fatalf("got %+v %v, want %+v %v", ep, ok, c.want, c.ok)
			}
		})
	}
	t.Run("POOL-5/gemini-content-hash-and-demands", func(t *testing.T) {
		body := []byte(`{"systemInstruction":{"parts":[{"text":"S"}]},"contents":[{"role":"user","parts":[{"text":"hi"},{"inlineData":{"mimeType":"image/png","data":"AA=="}}]}],"generationConfig":{"maxOutputTokens":77}}`)
		ci, err := gemini.Flavour{}.ParseRequest(neutral.Endpoint{Model: "m", Stream: true}, body)
		if err != nil || ci.Model != "m" || !ci.Stream || !ci.HasImage || ci.MaxTokens != 77 || !strings.HasPrefix(ci.SessionContentHash(), "content:") {
			t.Fatalf("%+v %v", ci, err)
		}
	})
}

func TestGeminiWatcher(t *testing.T) {
	ev := func(data string) *wirefmt.SSEEvent { return &wirefmt.SSEEvent{Data: []byte(data)} }
	w := gemini.Flavour{}.NewWatcher()
	steps := []struct {
		name      string
		ev        *wirefmt.SSEEvent
		committed bool
		want      neutral.Verdict
	}{
		{"POOL-7/gemini-empty-chunk-is-preamble", ev(`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]}}]}`), false, neutral.VPreamble},
		{"POOL-7/gemini-comment-is-preamble", &wirefmt.SSEEvent{Comment: true}, false, neutral.VPreamble},
		{"POOL-7/gemini-text-commits", ev(`{"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}`), false, neutral.VVisible},
		{"POOL-7/gemini-finish-ends", ev(`{"candidates":[{"content":{"parts":[{"text":""}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":2,"cachedContentTokenCount":4}}`), true, neutral.VEnd},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if got := w.Observe(s.ev, s.committed).Verdict; got != s.want {
				t.Fatalf("verdict %v, want %v", got, s.want)
			}
		})
	}
	t.Run("POOL-13b/gemini-usage-and-clean-end", func(t *testing.T) {
		if u := w.Usage(); u.Input != 6 || u.CacheRead != 4 || u.Output != 2 {
			t.Fatalf("usage %+v", u)
		}
		if !w.(neutral.CleanEnder).EndedCleanly() {
			t.Fatal("EOF after finishReason must be a clean end")
		}
	})
	t.Run("POOL-7/gemini-one-chunk-answer-commits-before-it-ends", func(t *testing.T) {
		w := gemini.Flavour{}.NewWatcher()
		if got := w.Observe(ev(`{"candidates":[{"content":{"parts":[{"text":"all"}]},"finishReason":"STOP"}]}`), false).Verdict; got != neutral.VVisible {
			t.Fatalf("verdict %v", got)
		}
	})
	t.Run("POOL-10/gemini-error-chunk", func(t *testing.T) {
		o := gemini.Flavour{}.NewWatcher().Observe(ev(`{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}`), false)
		if o.Verdict != neutral.VError || o.ErrStatus != 429 || o.ErrType != "RESOURCE_EXHAUSTED" || o.ErrMsg != "quota" {
			t.Fatalf("%+v", o)
		}
	})
}

func TestGeminiAnswers(t *testing.T) {
	f := gemini.Flavour{}
	ep := neutral.Endpoint{Kind: neutral.EpGenerate}
	cases := []struct{ name, body, class string }{
		{"POOL-7/gemini-answer-usable", `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}]}}]}`, ""},
		{"POOL-7/gemini-answer-empty", `{"candidates":[{"content":{"parts":[]},"finishReason":"STOP"}]}`, config.ClassEmpty},
		{"POOL-7/gemini-answer-not-json", `<html>`, config.ClassServer},
		{"POOL-7/gemini-answer-error", `{"error":{"code":500,"message":"x"}}`, config.ClassServer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, class, _ := f.InspectBody(ep, []byte(c.body)); class != c.class {
				t.Fatalf("class %q, want %q", class, c.class)
			}
		})
	}
	t.Run("POOL-11/gemini-error-document", func(t *testing.T) {
		b := string(f.ErrorBody(429, "all failed", []neutral.Attempt{{Member: "a", Class: "rate_limit", Status: 429}}))
		if !strings.Contains(b, `"status":"RESOURCE_EXHAUSTED"`) || !strings.Contains(b, `"code":429`) || !strings.Contains(b, `"attempts"`) {
			t.Fatal(b)
		}
		if typ, msg := f.ParseError([]byte(b)); typ != "RESOURCE_EXHAUSTED" || msg != "all failed" {
			t.Fatalf("%q %q", typ, msg)
		}
		if e := string(f.ErrorEvent(503, "x")); !strings.HasPrefix(e, "data: {\"error\"") || !strings.HasSuffix(e, "\n\n") {
			t.Fatal(e)
		}
	})
}
