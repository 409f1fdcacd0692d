package api

import (
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// TestRegistry: each of the four kinds has the flavour that reads and
// writes it, each channel api word the flavour of its pools, and a member
// is sent the API its channel speaks (SPEC POOL-1, POOL-21).
func TestRegistry(t *testing.T) {
	t.Run("POOL-21/for-kind", func(t *testing.T) {
		for _, k := range []apikind.Kind{apikind.Anthropic, apikind.Chat, apikind.Responses, apikind.Gemini} {
			if f := For(k); f == nil || f.API() != k {
				t.Errorf("For(%s) = %v", k, f)
			}
		}
		if For("soap") != nil {
			t.Error("For of an unknown kind is not nil")
		}
	})
	t.Run("POOL-1/for-channel", func(t *testing.T) {
		for word, want := range map[string]apikind.Kind{config.APIAnthropic: apikind.Anthropic, config.APIOpenAI: apikind.Chat,
			config.APIOpenAIChat: apikind.Chat, config.APIGemini: apikind.Gemini} {
			if f := ForChannel(word); f == nil || f.API() != want {
				t.Errorf("ForChannel(%s) = %v, want the %s flavour", word, f, want)
			}
		}
		if ForChannel("soap") != nil {
			t.Error("ForChannel of an unknown word is not nil")
		}
	})
	t.Run("POOL-21/member-kind", func(t *testing.T) {
		for _, c := range []struct {
			channel      string
			client, want apikind.Kind
		}{
			{config.APIAnthropic, apikind.Chat, apikind.Anthropic}, {config.APIOpenAI, apikind.Anthropic, apikind.Chat},
			{config.APIOpenAI, apikind.Responses, apikind.Responses}, {config.APIOpenAIChat, apikind.Responses, apikind.Chat},
			{config.APIGemini, apikind.Responses, apikind.Gemini}, {config.APIGemini, apikind.Gemini, apikind.Gemini},
		} {
			if got := MemberKind(c.channel, c.client); got != c.want {
				t.Errorf("MemberKind(%s, %s) = %s, want %s", c.channel, c.client, got, c.want)
			}
		}
	})
	t.Run("POOL-21/upstream-paths", func(t *testing.T) {
		for k, want := range map[apikind.Kind]string{apikind.Anthropic: "/v1/messages", apikind.Chat: "/v1/chat/completions",
			apikind.Responses: "/v1/responses", apikind.Gemini: "/v1beta/models/g-1:streamGenerateContent"} {
			if got := For(k).UpstreamPath("g-1", true); got != want {
				t.Errorf("%s: UpstreamPath = %q, want %q", k, got, want)
			}
		}
	})
}
