package api

import (
	"encoding/json"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/anthropic"
	"github.com/dual-proxy/dual-proxy/pool/api/gemini"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

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

// FuzzStripThinking: whatever the body, each API's StripSignatures
// (Anthropic's thinking blocks, Gemini's thoughtSignatures) returns valid
// JSON when the body was, and a body with nothing to remove comes back
// unchanged.
func FuzzStripThinking(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"a","signature":"x"},{"type":"text","text":"t"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a"}]}],"thinking":{"type":"enabled"}}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"redacted_thinking","data":"d"}]}]}`))
	f.Add([]byte(`{"contents":[{"parts":[{"thoughtSignature":"g","text":"a"}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		valid := json.Valid(body)
		for _, keep := range []func(string) bool{func(string) bool { return false }, func(string) bool { return true }} {
			out := For(apikind.Anthropic).StripSignatures(body, keep)
			if valid && !json.Valid(out) {
				t.Fatalf("%s → invalid %s", body, out)
			}
			out = For(apikind.Gemini).StripSignatures(body, keep)
			if valid && !json.Valid(out) {
				t.Fatalf("%s → invalid %s", body, out)
			}
		}
	})
}
