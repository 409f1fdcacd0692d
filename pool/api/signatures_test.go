package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/anthropic"
	"github.com/dual-proxy/dual-proxy/pool/api/gemini"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

func TestStripThinking(t *testing.T) {
	own, foreign := neutral.SigKey("sigA"), neutral.SigKey("sigB")
	keep := func(k string) bool { return k != foreign }
	t.Run("POOL-18/foreign-and-unsigned-thinking-removed-own-kept", func(t *testing.T) {
		body := `{"model":"m","thinking":{"type":"adaptive"},"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"sigA"},{"type":"text","text":"one"}]},{"role":"user","content":"next"},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"b","signature":"sigB"},{"type":"text","text":"two"}]},{"role":"user","content":"next"},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"c","signature":""},{"type":"redacted_thinking","data":"sigB"},{"type":"text","text":"three"}]},{"role":"user","content":"last"}]}`
		out := string(anthropic.StripThinking([]byte(body), keep))
		if !json.Valid([]byte(out)) {
			t.Fatalf("invalid JSON %s", out)
		}
		want := strings.NewReplacer(`{"type":"thinking","thinking":"b","signature":"sigB"},`, "", `{"type":"thinking","thinking":"c","signature":""},{"type":"redacted_thinking","data":"sigB"},`, "").Replace(body)
		if out != want {
			t.Fatalf("got  %s\nwant %s", out, want)
		}
		if keys, unsigned := anthropic.AnthropicSigKeys([]byte(body)); !unsigned || len(keys) != 3 || keys[0] != own || keys[1] != foreign || keys[2] != foreign {
			t.Fatalf("keys %v", keys)
		}
	})
	t.Run("POOL-18/nothing-foreign-body-unchanged", func(t *testing.T) {
		body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"sigA"},{"type":"text","text":"x"}]},{"role":"user","content":"y"}]}`)
		if out := anthropic.StripThinking(body, keep); &out[0] != &body[0] {
			t.Fatalf("copied: %s", out)
		}
		if keys, unsigned := anthropic.AnthropicSigKeys(body); unsigned || len(keys) != 1 {
			t.Fatalf("keys %v unsigned %v", keys, unsigned)
		}
	})
	t.Run("POOL-18/tool-loop-losing-its-thinking-goes-without-thinking", func(t *testing.T) {
		body := `{"model":"m","thinking":{"type":"enabled","budget_tokens":2000},"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"b","signature":"sigB"},{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`
		out := string(anthropic.StripThinking([]byte(body), keep))
		if !strings.Contains(out, `"thinking":{"type":"disabled"}`) || strings.Contains(out, "sigB") || !json.Valid([]byte(out)) {
			t.Fatalf("%s", out)
		}
		// A loop whose earlier message lost its block but whose last
		// message keeps its own: thinking stays on.
		body2 := strings.Replace(body, `{"role":"user","content":[{"type":"tool_result"`,
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"sigA"},{"type":"tool_use","id":"t2","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result"`, 1)
		body2 = strings.Replace(body2, `"tool_use_id":"t1","content":"ok"}]}]}`, `"tool_use_id":"t2","content":"ok"}]}]}`, 1)
		out = string(anthropic.StripThinking([]byte(body2), keep))
		if !strings.Contains(out, `"thinking":{"type":"enabled"`) || strings.Contains(out, "sigB") || !json.Valid([]byte(out)) {
			t.Fatalf("%s", out)
		}
	})
	t.Run("POOL-18/message-left-empty-removed", func(t *testing.T) {
		body := `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"b","signature":"sigB"}]},{"role":"user","content":"y"}]}`
		out := string(anthropic.StripThinking([]byte(body), keep))
		if out != `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"user","content":"y"}]}` {
			t.Fatalf("%s", out)
		}
	})
}

func TestStripThoughtSignatures(t *testing.T) {
	foreign := neutral.SigKey("gB")
	keep := func(k string) bool { return k != foreign }
	t.Run("POOL-18/foreign-thought-signature-becomes-placeholder", func(t *testing.T) {
		body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"x","thought":true},{"functionCall":{"name":"f","args":{}},"thoughtSignature":"gB"}]},` +
			`{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]},{"role":"model","parts":[{"text":"y","thoughtSignature":"gA"}]}]}`
		out := string(gemini.StripThoughtSignatures([]byte(body), keep))
		want := strings.Replace(body, `"thoughtSignature":"gB"`, `"thoughtSignature":"skip_thought_signature_validator"`, 1)
		if out != want {
			t.Fatalf("got  %s\nwant %s", out, want)
		}
		if keys := gemini.GeminiSigKeys([]byte(want)); len(keys) != 1 || keys[0] != neutral.SigKey("gA") {
			t.Fatalf("keys %v", keys)
		}
	})
}

func TestAnswerSignatures(t *testing.T) {
	t.Run("POOL-18/anthropic-answer-and-stream-signatures-recorded", func(t *testing.T) {
		body := []byte(`{"type":"message","role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"S1"},{"type":"redacted_thinking","data":"R1"},{"type":"text","text":"x"}]}`)
		if keys := (anthropic.Flavour{}).StateKeys(body); len(keys) != 2 || keys[0] != neutral.SigKey("S1") || keys[1] != neutral.SigKey("R1") {
			t.Fatalf("keys %v", keys)
		}
		w := anthropic.Flavour{}.NewWatcher()
		for _, ev := range []wirefmt.SSEEvent{
			{Name: "content_block_start", Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`)},
			{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a"}}`)},
			{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"S1"}}`)},
			{Name: "content_block_stop", Data: []byte(`{"type":"content_block_stop","index":0}`)},
			{Name: "content_block_start", Data: []byte(`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"R1"}}`)},
			{Name: "content_block_stop", Data: []byte(`{"type":"content_block_stop","index":1}`)},
		} {
			w.Observe(&ev, true)
		}
		if keys := w.(neutral.StateWatcher).StateKeys(); len(keys) != 2 || keys[0] != neutral.SigKey("S1") || keys[1] != neutral.SigKey("R1") {
			t.Fatalf("stream keys %v", keys)
		}
	})
	t.Run("POOL-18/gemini-answer-and-stream-signatures-recorded", func(t *testing.T) {
		chunk := []byte(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{}},"thoughtSignature":"G1"}]}}]}`)
		if keys := (gemini.Flavour{}).StateKeys(chunk); len(keys) != 1 || keys[0] != neutral.SigKey("G1") {
			t.Fatalf("keys %v", keys)
		}
		w := gemini.Flavour{}.NewWatcher()
		w.Observe(&wirefmt.SSEEvent{Data: chunk}, false)
		if keys := w.(neutral.StateWatcher).StateKeys(); len(keys) != 1 || keys[0] != neutral.SigKey("G1") {
			t.Fatalf("stream keys %v", keys)
		}
	})
}

// FuzzStripThinking: whatever the body, the result is valid JSON when the
// body was, and a body with nothing to remove comes back unchanged.
func FuzzStripThinking(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"x"},{"type":"text","text":"t"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a"}]}],"thinking":{"type":"enabled"}}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"redacted_thinking","data":"d"}]}]}`))
	f.Add([]byte(`{"contents":[{"parts":[{"thoughtSignature":"g","text":"a"}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		valid := json.Valid(body)
		for _, keep := range []func(string) bool{func(string) bool { return false }, func(string) bool { return true }} {
			out := anthropic.StripThinking(body, keep)
			if valid && !json.Valid(out) {
				t.Fatalf("%s → invalid %s", body, out)
			}
			out = gemini.StripThoughtSignatures(body, keep)
			if valid && !json.Valid(out) {
				t.Fatalf("%s → invalid %s", body, out)
			}
		}
	})
}
