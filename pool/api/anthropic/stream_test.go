package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/internal/wiretest"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// FuzzPlainBlockText: an Anthropic event read by plainBlockText is the
// text delta json.Unmarshal reads, index and text (SPEC POOL-21: the
// streamed text unchanged, with no json.Unmarshal per event).
func FuzzPlainBlockText(f *testing.F) {
	for _, s := range wiretest.StringSeeds {
		b, _ := json.Marshal(s)
		f.Add([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + string(b) + `}}`))
	}
	for _, s := range []string{`{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"a"}}`,
		`{"type":"content_block_delta","index":1e2,"delta":{"type":"text_delta","text":"a"}}`,
		`{"type":"content_block_delta","index":12345678901,"delta":{"type":"text_delta","text":"a"}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"a"},"x":{}}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"a"}}}`,
		`{"delta":{"text":"a","type":"text_delta"},"index":0,"type":"content_block_delta"}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","type":"x"}}`,
		`{"type":"content_block_delta","delta":{"type":"text_delta","text":"a"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		idx, text, ok := plainBlockText(in)
		if !ok {
			return
		}
		var ev anStreamEvent
		if err := json.Unmarshal(in, &ev); err != nil {
			t.Fatalf("plainBlockText(%q) = %d %q, but json.Unmarshal fails: %v", in, idx, text, err)
		}
		var dl anDelta
		derr := json.Unmarshal(ev.Delta, &dl)
		if ev.Type != "content_block_delta" || ev.Index == nil || *ev.Index != idx || derr != nil || dl.Type != "text_delta" || dl.Text != text ||
			dl.PartialJSON != "" || dl.Thinking != "" || dl.Signature != "" || dl.StopReason != nil ||
			ev.Message != nil || ev.ContentBlock != nil || ev.Usage != nil || ev.Error != nil {
			t.Fatalf("plainBlockText(%q) = %d %q, json.Unmarshal = %+v", in, idx, text, ev)
		}
	})
}

// TestStreamFastPaths: the usual text events of scenario 7's mock channel
// (bench/poolmock.go) and of Anthropic's own server take the fast path
// (SPEC POOL-21).
func TestStreamFastPaths(t *testing.T) {
	t.Run("POOL-21/anthropic-text-delta-fast", func(t *testing.T) {
		for _, in := range []string{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"@1234567890@ hi"}}`,
			`{"delta":{"text":"@1234567890@ hi","type":"text_delta"},"index":0,"type":"content_block_delta"}`} {
			if idx, text, ok := plainBlockText([]byte(in)); !ok || idx != 0 || text != "@1234567890@ hi" {
				t.Fatalf("%s: %d %q %v, want the fast path's 0 %q", in, idx, text, ok, "@1234567890@ hi")
			}
		}
	})
}

// FuzzTextDelta: an Anthropic delta read by plainTextDelta is the text
// Delta json.Unmarshal reads (SPEC POOL-21: the streamed text unchanged).
func FuzzTextDelta(f *testing.F) {
	for _, s := range wiretest.StringSeeds {
		b, _ := json.Marshal(s)
		f.Add([]byte(`{"type":"text_delta","text":` + string(b) + `}`))
	}
	f.Add([]byte(`{"type":"text_delta","text":"a","text":"b"}`))
	f.Add([]byte(`{"type":"text_delta","text":"a"}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, ok := plainTextDelta(in)
		if !ok {
			return
		}
		var want anDelta
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatalf("plainTextDelta(%q) = %q, but json.Unmarshal fails: %v", in, got, err)
		}
		if want.Type != "text_delta" || got != want.Text || want.PartialJSON != "" || want.Thinking != "" || want.Signature != "" {
			t.Fatalf("plainTextDelta(%q) = %q, json.Unmarshal = %+v", in, got, want)
		}
	})
}

// TestStreamDeltaEncodersMatchMarshal: the hand-written delta events carry
// what the json.Marshal forms carried, the same JSON in the API's field
// order.
func TestStreamDeltaEncodersMatchMarshal(t *testing.T) {
	for _, s := range wiretest.StringSeeds[1:] {
		t.Run("POOL-21/anthropic-delta", func(t *testing.T) {
			e := &anthropicStreamEncoder{}
			for _, c := range []struct {
				p          neutral.Part
				typ, field string
			}{
				{neutral.Part{Kind: neutral.KindText, Text: s}, "text_delta", "text"},
				{neutral.Part{Kind: neutral.KindToolCall, Args: s}, "input_json_delta", "partial_json"},
				{neutral.Part{Kind: neutral.KindReasoning, Text: s}, "thinking_delta", "thinking"},
				{neutral.Part{Kind: neutral.KindReasoning, Signature: s}, "signature_delta", "signature"},
			} {
				b, ok := e.AppendDelta([]byte("prev"), neutral.Event{Kind: neutral.EvDelta, Index: 3, Part: c.p})
				got, prev := strings.CutPrefix(string(b), "prev")
				if !ok || !prev {
					t.Fatalf("appendDelta: ok %v, earlier bytes kept %v", ok, prev)
				}
				want := "event: content_block_delta\ndata: " + string(wirefmt.MustJSON(struct {
					Type  string            `json:"type"`
					Index int               `json:"index"`
					Delta map[string]string `json:"delta"`
				}{"content_block_delta", 3, nil}))
				want = strings.TrimSuffix(want, "null}") + `{"type":"` + c.typ + `","` + c.field + `":` + string(wirefmt.MustJSON(s)) + "}}\n\n"
				if got != want {
					t.Errorf("%s %q:\n got %s\nwant %s", c.typ, s, got, want)
				}
				old := wirefmt.MustJSON(map[string]any{"type": "content_block_delta", "index": 3, "delta": map[string]string{"type": c.typ, c.field: s}})
				if data := strings.TrimSuffix(strings.TrimPrefix(got, "event: content_block_delta\ndata: "), "\n\n"); !wiretest.SameJSON(data, string(old)) {
					t.Errorf("%s %q: %s is not the JSON of %s", c.typ, s, data, old)
				}
			}
		})
	}
}
