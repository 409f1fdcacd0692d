package pool

import (
	"net/url"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// TestQueryTokenNotForwarded: the pool token given as Gemini's key= query
// parameter, however its name is percent-encoded, authenticates the call
// and never reaches a member (SPEC POOL-20); the rest of the client's query
// passes through.
func TestQueryTokenNotForwarded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client apikind.Kind
		member string // channel api
		path   string // after /pool/p, the token appended as "&" + param
		param  string
		keep   string // a parameter the member must still get
		count  bool   // a token-counting call (the mock may answer 404)
	}{
		{"POOL-20/anthropic-encoded-key-name-not-forwarded", apikind.Anthropic, config.APIAnthropic, "/v1/messages?beta=true", "k%65y", "beta=true", false},
		{"POOL-20/anthropic-count-tokens-encoded-key-name-not-forwarded", apikind.Anthropic, config.APIAnthropic, "/v1/messages/count_tokens?beta=true", "k%65y", "beta=true", true},
		{"POOL-20/chat-encoded-key-name-not-forwarded", apikind.Chat, config.APIOpenAI, "/v1/chat/completions?x=1", "%6B%65%79", "x=1", false},
		{"POOL-20/responses-encoded-key-name-not-forwarded", apikind.Responses, config.APIOpenAI, "/v1/responses?x=1", "k%65y", "x=1", false},
		{"POOL-20/gemini-encoded-key-name-not-forwarded", apikind.Gemini, config.APIGemini, "/v1beta/models/m:generateContent?x=1", "k%65y", "x=1", false},
		{"POOL-20/gemini-stream-encoded-key-name-not-forwarded", apikind.Gemini, config.APIGemini, "/v1beta/models/m:streamGenerateContent?alt=sse", "k%65y", "alt=sse", false},
		{"POOL-20/gemini-count-tokens-encoded-key-name-not-forwarded", apikind.Gemini, config.APIGemini, "/v1beta/models/m:countTokens?x=1", "k%65y", "x=1", true},
		{"POOL-20/gemini-plain-key-not-forwarded", apikind.Gemini, config.APIGemini, "/v1beta/models/m:generateContent?x=1", "key", "x=1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newMixWorld(t, []mixMember{{name: "a", api: tc.member, speaks: memberSpeaks(tc.member, tc.client),
				turns: []mockllm.Turn{{Text: "ok"}}}}, "")
			c := clientRequest(tc.client, strings.Contains(tc.path, "alt=sse"), "say hi")
			c.path = tc.path + "&" + tc.param + "=" + mixToken
			delete(c.hdr, "x-api-key")
			delete(c.hdr, "Authorization")
			delete(c.hdr, "x-goog-api-key")
			resp, body := w.do(c)
			if resp.StatusCode == 401 {
				t.Fatalf("the token in %s= was not accepted: %s", tc.param, body)
			}
			if !tc.count && resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			calls := w.mocks["a"].Calls()
			if len(calls) != 1 {
				t.Fatalf("member calls %+v", calls)
			}
			q := calls[0].Query
			dec, _ := url.QueryUnescape(q)
			if strings.Contains(q, mixToken) || strings.Contains(dec, mixToken) {
				t.Fatalf("pool token reached the member in the query %q", q)
			}
			if !strings.Contains(q, tc.keep) {
				t.Fatalf("member query %q lost %s", q, tc.keep)
			}
		})
	}
	t.Run("POOL-20/token-in-another-query-parameter-not-forwarded", func(t *testing.T) {
		w := newMixWorld(t, []mixMember{{name: "a", api: config.APIGemini, speaks: mockllm.Gemini, turns: []mockllm.Turn{{Text: "ok"}}}}, "")
		c := clientRequest(apikind.Gemini, false, "say hi")
		c.path += "?x=1&api_key=" + mixToken + "&y=a;key=" + mixToken
		resp, body := w.do(c)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		q := w.mocks["a"].Calls()[0].Query
		if strings.Contains(q, mixToken) || !strings.Contains(q, "x=1") {
			t.Fatalf("member query %q", q)
		}
	})
}
