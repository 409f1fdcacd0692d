package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
)

func TestStripThinking(t *testing.T) {
	own, foreign := neutral.SigKey("sigA"), neutral.SigKey("sigB")
	keep := func(k string) bool { return k != foreign }
	t.Run("POOL-18/foreign-and-unsigned-thinking-removed-own-kept", func(t *testing.T) {
		body := `{"model":"m","thinking":{"type":"adaptive"},"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"sigA"},{"type":"text","text":"one"}]},{"role":"user","content":"next"},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"b","signature":"sigB"},{"type":"text","text":"two"}]},{"role":"user","content":"next"},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"c","signature":""},{"type":"redacted_thinking","data":"sigB"},{"type":"text","text":"three"}]},{"role":"user","content":"last"}]}`
		out := string(stripThinking([]byte(body), keep))
		if !json.Valid([]byte(out)) {
			t.Fatalf("invalid JSON %s", out)
		}
		want := strings.NewReplacer(`{"type":"thinking","thinking":"b","signature":"sigB"},`, "", `{"type":"thinking","thinking":"c","signature":""},{"type":"redacted_thinking","data":"sigB"},`, "").Replace(body)
		if out != want {
			t.Fatalf("got  %s\nwant %s", out, want)
		}
		if keys, unsigned := anthropicSigKeys([]byte(body)); !unsigned || len(keys) != 3 || keys[0] != own || keys[1] != foreign || keys[2] != foreign {
			t.Fatalf("keys %v", keys)
		}
	})
	t.Run("POOL-18/nothing-foreign-body-unchanged", func(t *testing.T) {
		body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"sigA"},{"type":"text","text":"x"}]},{"role":"user","content":"y"}]}`)
		if out := stripThinking(body, keep); &out[0] != &body[0] {
			t.Fatalf("copied: %s", out)
		}
		if keys, unsigned := anthropicSigKeys(body); unsigned || len(keys) != 1 {
			t.Fatalf("keys %v unsigned %v", keys, unsigned)
		}
	})
	t.Run("POOL-18/tool-loop-losing-its-thinking-goes-without-thinking", func(t *testing.T) {
		body := `{"model":"m","thinking":{"type":"enabled","budget_tokens":2000},"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"b","signature":"sigB"},{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`
		out := string(stripThinking([]byte(body), keep))
		if !strings.Contains(out, `"thinking":{"type":"disabled"}`) || strings.Contains(out, "sigB") || !json.Valid([]byte(out)) {
			t.Fatalf("%s", out)
		}
		// A loop whose earlier message lost its block but whose last
		// message keeps its own: thinking stays on.
		body2 := strings.Replace(body, `{"role":"user","content":[{"type":"tool_result"`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"sigA"},{"type":"tool_use","id":"t2","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result"`, 1)
		body2 = strings.Replace(body2, `"tool_use_id":"t1","content":"ok"}]}]}`, `"tool_use_id":"t2","content":"ok"}]}]}`, 1)
		out = string(stripThinking([]byte(body2), keep))
		if !strings.Contains(out, `"thinking":{"type":"enabled"`) || strings.Contains(out, "sigB") || !json.Valid([]byte(out)) {
			t.Fatalf("%s", out)
		}
	})
	t.Run("POOL-18/message-left-empty-removed", func(t *testing.T) {
		body := `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"b","signature":"sigB"}]},{"role":"user","content":"y"}]}`
		out := string(stripThinking([]byte(body), keep))
		if out != `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"user","content":"y"}]}` {
			t.Fatalf("%s", out)
		}
	})
}
