package wire

import (
	"testing"
)

func TestSessionIdentity(t *testing.T) {
	t.Run("POOL-5/metadata-user-id-forms", func(t *testing.T) {
		if got := claudeSessionFromUserID(`{"device_id":"d","account_uuid":"","session_id":"e058fb67"}`); got != "e058fb67" {
			t.Fatal(got)
		}
		if got := claudeSessionFromUserID("user_abc_account_1234_session_9f1c-77"); got != "9f1c-77" {
			t.Fatal(got)
		}
	})
	t.Run("POOL-5/content-hash-whole-first-message-ignores-cache-control", func(t *testing.T) {
		parse := func(body string) string {
			ci, err := AnthropicFlavour{}.ParseRequest(Endpoint{Kind: EpGenerate}, []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			return ci.SessionContentHash()
		}
		a := parse(`{"model":"m","system":"s","messages":[{"role":"user","content":[{"type":"text","text":"CLAUDE.md … task A"}]}]}`)
		b := parse(`{"model":"m","system":"s","messages":[{"role":"user","content":[{"type":"text","text":"CLAUDE.md … task B"}]}]}`)
		a2 := parse(`{"model":"m","system":"s","messages":[{"role":"user","content":[{"type":"text","text":"CLAUDE.md … task A","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"x"},{"role":"user","content":"next"}]}`)
		if a == b || a != a2 || a == "" {
			t.Fatalf("a=%s b=%s a2=%s", a, b, a2)
		}
	})
}

func TestCapabilityFilter(t *testing.T) {
	t.Run("POOL-12/anthropic-thinking-budget-mapped", func(t *testing.T) {
		// A budget above max_tokens' room is clamped below max_tokens.
		if got := thinkingFor("high", 20000); got["budget_tokens"] != 19999 {
			t.Fatalf("clamp %v", got)
		}
	})
}
