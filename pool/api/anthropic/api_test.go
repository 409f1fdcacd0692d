package anthropic

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
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
			ci, err := Flavour{}.ParseRequest(neutral.Endpoint{Kind: neutral.EpGenerate}, []byte(body))
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

// TestAnthropicUsageScan: the Anthropic watcher's usage scan reads
// the numbers json.Unmarshal reads, whatever the event's shape (SPEC
// POOL-13b: the cache accounting).
func TestAnthropicUsageScan(t *testing.T) {
	events := []string{
		`{"type":"message_start","message":{"id":"x","usage":{"input_tokens":10,"cache_read_input_tokens":30},"content":[{"usage":{"input_tokens":99}}]}}`,
		`{"type":"message_start","usage":{"input_tokens":99},"message":{"usage":{"input_tokens":1}}}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":1,"input_tokens":2}}}`,
		`{"type":"message_start","message":{"usage":{"Input_Tokens":7}}}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":null,"output_tokens":-3}}}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":1e1}}}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":9223372036854775807}}}`,
		`{"type":"message_start","message":null}`,
		`{"type":"message_start","message":{"usage":[1]}}`,
		`{"type":"message_delta","delta":{"usage":{"output_tokens":99}},"usage":{"output_tokens":5}}`,
		`{"type":"message_delta","usage":{"output_tokens":5},"usage":{"output_tokens":6}}`,
		`{"type":"message_delta","usage":{"output_tokens":5,"extra":{"a":[{"b":` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `}]}}}`,
		`{"type":"message_delta","usage":{"output_tokens":"5"}}`,
		`{"type":"message_delta","usage":{"\u006futput_tokens":5}}`,
	}
	for i, e := range events {
		for _, c := range []struct {
			name string
			Scan func([]byte) (any, error)
			std  func([]byte) (any, error)
		}{
			{"start", func(b []byte) (any, error) {
				var v startUsage
				err := wirefmt.DecodeRequest(b, &v)
				return v, err
			},
				func(b []byte) (any, error) { var v startUsage; err := json.Unmarshal(b, &v); return v, err }},
			{"delta", func(b []byte) (any, error) {
				var v deltaUsage
				err := wirefmt.DecodeRequest(b, &v)
				return v, err
			},
				func(b []byte) (any, error) { var v deltaUsage; err := json.Unmarshal(b, &v); return v, err }},
		} {
			got, gerr := c.Scan([]byte(e))
			want, werr := c.std([]byte(e))
			if (gerr == nil) != (werr == nil) || (gerr == nil && !reflect.DeepEqual(got, want)) {
				t.Errorf("POOL-13b/event %d %s: scan %+v %v, json.Unmarshal %+v %v", i, c.name, got, gerr, want, werr)
			}
		}
	}
}
