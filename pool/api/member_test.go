package api

import (
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// TestFlavourMemberQuestions: what the pool asks each API's Flavour about
// a call to one of its members, and the answers the pool writes itself in
// the client's API (SPEC POOL-1, POOL-7b, POOL-21).
func TestFlavourMemberQuestions(t *testing.T) {
	t.Run("POOL-21/passthrough-keeps-the-clients-path-and-query", func(t *testing.T) {
		ep := neutral.Endpoint{Kind: neutral.EpGenerate, Upstream: "/v1/x"}
		for _, k := range []apikind.Kind{apikind.Anthropic, apikind.Chat, apikind.Responses} {
			if p, q := For(k).MemberPath(ep, "target", true, false, "beta=true"); p != "/v1/x" || q != "beta=true" {
				t.Errorf("%s: %s?%s", k, p, q)
			}
			if p, q := For(k).MemberPath(ep, "target", true, true, "beta=true"); p != For(k).UpstreamPath("target", true) || q != "" {
				t.Errorf("%s translated: %s?%s", k, p, q)
			}
		}
	})
	t.Run("POOL-21/gemini-names-the-target-model-and-streams-sse", func(t *testing.T) {
		g := For(apikind.Gemini)
		gen := neutral.Endpoint{Kind: neutral.EpGenerate, Upstream: "/v1beta/models/m:streamGenerateContent"}
		for _, c := range []struct {
			translated, stream bool
			query, wantPath    string
			wantQuery          string
		}{
			{false, true, "alt=sse", "/v1beta/models/target:streamGenerateContent", "alt=sse"},
			{false, true, "x=1", "/v1beta/models/target:streamGenerateContent", "x=1&alt=sse"},
			{true, true, "x=1", "/v1beta/models/target:streamGenerateContent", "alt=sse"},
			{true, false, "x=1", "/v1beta/models/target:generateContent", ""},
		} {
			if p, q := g.MemberPath(gen, "target", c.stream, c.translated, c.query); p != c.wantPath || q != c.wantQuery {
				t.Errorf("%+v: %s?%s", c, p, q)
			}
		}
		count := neutral.Endpoint{Kind: neutral.EpCountTokens, Upstream: "/v1beta/models/m:countTokens"}
		if p, q := g.MemberPath(count, "target", false, false, "x=1"); p != "/v1beta/models/target:countTokens" || q != "x=1" {
			t.Errorf("countTokens: %s?%s", p, q)
		}
	})
	t.Run("POOL-21/translated-messages-request-gets-anthropic-version", func(t *testing.T) {
		for _, k := range []apikind.Kind{apikind.Anthropic, apikind.Chat, apikind.Responses, apikind.Gemini} {
			h := http.Header{}
			For(k).SetTranslatedHeaders(h)
			if got, want := h.Get("Anthropic-Version"), map[bool]string{true: "2023-06-01"}[k == apikind.Anthropic]; got != want || len(h) > 1 {
				t.Errorf("%s: %v", k, h)
			}
		}
		h := http.Header{"Anthropic-Version": {"2024-01-01"}}
		For(apikind.Anthropic).SetTranslatedHeaders(h)
		if h.Get("Anthropic-Version") != "2024-01-01" {
			t.Errorf("the client's anthropic-version replaced: %v", h)
		}
	})
	t.Run("POOL-7b/collected-stream-asks-for-a-stream-with-usage", func(t *testing.T) {
		body := []byte(`{"model":"m","stream":false,"stream_options":{"x":1}}`)
		for k, want := range map[apikind.Kind]string{
			apikind.Anthropic: `{"model":"m","stream":true,"stream_options":{"x":1}}`,
			apikind.Chat:      `{"model":"m","stream":true,"stream_options":{"include_usage":true,"x":1}}`,
		} {
			if !For(k).CollectsStreams() {
				t.Errorf("%s: the pool does not collect its streams", k)
			}
			got, err := For(k).StreamingBody(body)
			if err != nil || !sameJSON(string(got), want) {
				t.Errorf("%s: %s %v, want %s", k, got, err, want)
			}
		}
		for _, k := range []apikind.Kind{apikind.Responses, apikind.Gemini} {
			if For(k).CollectsStreams() {
				t.Errorf("%s collects streams", k)
			}
			if _, err := For(k).StreamingBody(body); err == nil {
				t.Errorf("%s: a streaming body for an API whose streams are not collected", k)
			}
		}
	})
	t.Run("POOL-1/token-count-estimate-in-the-clients-shape", func(t *testing.T) {
		for k, want := range map[apikind.Kind]string{apikind.Anthropic: `{"input_tokens":7}`, apikind.Chat: `{"input_tokens":7}`,
			apikind.Responses: `{"input_tokens":7}`, apikind.Gemini: `{"totalTokens":7}`} {
			if got := string(For(k).TokenCount(7)); got != want {
				t.Errorf("%s: %s, want %s", k, got, want)
			}
		}
	})
	t.Run("POOL-1/model-list-in-the-clients-shape", func(t *testing.T) {
		list := []config.ModelInfo{{ID: "a"}, {ID: "b"}}
		for k, keys := range map[apikind.Kind][]string{apikind.Anthropic: {"data", "first_id", "has_more", "last_id"},
			apikind.Chat: {"data", "object"}, apikind.Responses: {"data", "object"}, apikind.Gemini: {"models"}} {
			b, err := json.Marshal(For(k).ModelList(list, "pool-1"))
			var doc map[string]json.RawMessage
			if err != nil || json.Unmarshal(b, &doc) != nil {
				t.Fatalf("%s: %s %v", k, b, err)
			}
			if !reflect.DeepEqual(slices.Sorted(maps.Keys(doc)), keys) || !strings.Contains(string(b), `"a"`) && !strings.Contains(string(b), `"models/a"`) {
				t.Errorf("%s: %s", k, b)
			}
		}
	})
}
