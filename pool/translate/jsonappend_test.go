package translate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// jsonStringSeeds are strings whose encoding/json form has every escape
// Marshal writes.
var jsonStringSeeds = []string{"", "Hello there, ", `q"uote\back`, "<tag> & amp", "\b\f\n\r\t\x00\x01\x1f\x7f",
	"ü ✓ 😀", "line\u2028sep\u2029", "bad \xff utf-8 \xc3", "tail\xe2\x80", strings.Repeat("x", 300),
	// Long enough for the word-at-a-time paths, a special byte at each offset of a word.
	"0123456789abcdef<0123456", "01234567\"9abcdef", "0123456789abc\\", "0123456\x1f89abcdefgh", "01234567ü9abcdefgh",
	"0123456789abcde\u2028fgh", "01234567&", "0123456789abcdef\xff0123456789"}

// FuzzAppendJSONString: the hand-written string encoder of the streamed
// deltas writes exactly the bytes json.Marshal writes (SPEC POOL-21: a
// translated event must not change the text it carries).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("appendJSONString(%q) = %s, json.Marshal = %s", s, got[1:], want)
		}
	})
}

// TestResponsesDeltaMatchesMarshal: the hand-written Responses text delta
// is the event delta writes (json.Marshal of its map), byte for byte, and
// keeps the item's text and the sequence numbers alike (SPEC POOL-21).
func TestResponsesDeltaMatchesMarshal(t *testing.T) {
	for _, s := range jsonStringSeeds[1:] {
		t.Run("POOL-21/responses-text-delta", func(t *testing.T) {
			mk := func() *responsesStreamEncoder {
				e := newResponsesStreamEncoder("m", nil)
				e.kind, e.itemIndex, e.seq, e.item.ID = KindText, 2, 7, `msg_<&>"1`
				return e
			}
			fast, slow := mk(), mk()
			ev := Event{Kind: EvDelta, Index: 2, Part: Part{Kind: KindText, Text: s}}
			got, ok := fast.appendDelta([]byte("prev"), ev)
			want := slow.delta(ev.Part)
			if !ok || string(got) != "prev"+string(want) || fast.seq != slow.seq || fast.text.String() != slow.text.String() {
				t.Errorf("%q:\n got %s (ok %v)\nwant prev%s", s, got, ok, want)
			}
		})
	}
}

// TestStreamDeltaEncodersMatchMarshal: the hand-written text-delta events
// carry what the json.Marshal forms carried — byte for byte for Chat
// chunks, the same JSON in the API's field order for Anthropic deltas.
func TestStreamDeltaEncodersMatchMarshal(t *testing.T) {
	for _, s := range jsonStringSeeds[1:] {
		t.Run("POOL-21/chat-text-chunk", func(t *testing.T) {
			e := &chatStreamEncoder{model: `m<"x">`, id: "chatcmpl-&1", created: 1700000000}
			for field, d := range map[string]chatDeltaOut{"content": {Content: &s}, "reasoning_content": {ReasoningContent: &s}} {
				if got, want := e.textChunk([]byte("prev"), field, s), e.chunk(d, nil, nil); string(got) != "prev"+string(want) {
					t.Errorf("%s %q:\n got %s\nwant %s", field, s, got, want)
				}
			}
		})
		t.Run("POOL-21/anthropic-delta", func(t *testing.T) {
			e := &anthropicStreamEncoder{}
			for _, c := range []struct {
				p          Part
				typ, field string
			}{
				{Part{Kind: KindText, Text: s}, "text_delta", "text"},
				{Part{Kind: KindToolCall, Args: s}, "input_json_delta", "partial_json"},
				{Part{Kind: KindReasoning, Text: s}, "thinking_delta", "thinking"},
				{Part{Kind: KindReasoning, Signature: s}, "signature_delta", "signature"},
			} {
				b, ok := e.appendDelta([]byte("prev"), Event{Kind: EvDelta, Index: 3, Part: c.p})
				got, prev := strings.CutPrefix(string(b), "prev")
				if !ok || !prev {
					t.Fatalf("appendDelta: ok %v, earlier bytes kept %v", ok, prev)
				}
				want := "event: content_block_delta\ndata: " + string(mustJSON(struct {
					Type  string            `json:"type"`
					Index int               `json:"index"`
					Delta map[string]string `json:"delta"`
				}{"content_block_delta", 3, nil}))
				want = strings.TrimSuffix(want, "null}") + `{"type":"` + c.typ + `","` + c.field + `":` + string(mustJSON(s)) + "}}\n\n"
				if got != want {
					t.Errorf("%s %q:\n got %s\nwant %s", c.typ, s, got, want)
				}
				old := mustJSON(map[string]any{"type": "content_block_delta", "index": 3, "delta": map[string]string{"type": c.typ, c.field: s}})
				if data := strings.TrimSuffix(strings.TrimPrefix(got, "event: content_block_delta\ndata: "), "\n\n"); !sameJSON(data, string(old)) {
					t.Errorf("%s %q: %s is not the JSON of %s", c.typ, s, data, old)
				}
			}
		})
	}
}

// FuzzTopKeys: for every body json.Unmarshal reads as an object (or null),
// the key scan of objectKeys finds the same keys with the same null-ness as
// the json.Unmarshal into a map it replaces (SPEC POOL-21: a key that
// cannot be translated is still refused).
func FuzzTopKeys(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"a":1,"b":null,"c":"x\"}","d":[1,{"e":null}],"f":{"g":"]"}}`,
		` { "model" : "m" , "stream" :true,"x":null , "x": 2 } `, `{"\u006dodel":"m","k\u00e9y":null,"\ud83d\ude00":[]}`,
		"{\"bad\xff\":1,\"t\":true,\"n\":-1.5e3}", `{"a":"\\","b":"\\\""}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want map[string]keyOnly
		if json.Unmarshal(in, &want) != nil {
			return
		}
		got := topKeys(in)
		if len(got) != len(want) {
			t.Fatalf("%q: keys %v, want %v", in, got, want)
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Fatalf("%q: key %q = %v (found %v), want %v", in, k, g, ok, v)
			}
		}
	})
}

// FuzzPlainString: a string token taken without json.Unmarshal
// (plainString, the request decode's fast path) has exactly the value
// json.Unmarshal gives it (SPEC POOL-21: translation keeps the text).
func FuzzPlainString(f *testing.F) {
	for _, s := range jsonStringSeeds {
		f.Add([]byte(`"` + s + `"`))
		b, _ := json.Marshal(s)
		f.Add(b)
	}
	f.Add([]byte(`"a"b"`))
	f.Add([]byte(`"unterminated`))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, ok := plainString(in)
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatalf("plainString(%q) = %q, but json.Unmarshal fails: %v", in, got, err)
		}
		if got != want {
			t.Fatalf("plainString(%q) = %q, json.Unmarshal = %q", in, got, want)
		}
	})
}

// TestRequestEncodersWriteTextOnce: the system prompt and message text of a
// translated request are written as json.Marshal writes the string (HTML
// escapes and all), now that the request is marshalled once instead of
// string by string and again as raw fields (SPEC POOL-21).
func TestRequestEncodersWriteTextOnce(t *testing.T) {
	for _, s := range jsonStringSeeds[1:] {
		want, _ := json.Marshal(s)
		r := &Request{Model: "m", System: []string{s}, Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: KindText, Text: s}}},
			{Role: RoleAssistant, Parts: []Part{{Kind: KindText, Text: s}}}}}
		for api, wantSub := range map[apikind.Kind]string{
			apikind.Chat:      `"messages":[{"role":"system","content":` + string(want) + `},{"role":"user","content":` + string(want) + `},{"role":"assistant","content":` + string(want) + `}]`,
			apikind.Anthropic: `"messages":[{"role":"user","content":[{"type":"text","text":` + string(want) + `}]},{"role":"assistant","content":[{"type":"text","text":` + string(want) + `}]}],"system":` + string(want),
		} {
			t.Run("POOL-21/request-text-exact-"+string(api), func(t *testing.T) {
				got, err := EncodeRequest(api, r)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(got), wantSub) {
					t.Errorf("%q:\n got %s\nwant …%s…", s, got, wantSub)
				}
			})
		}
	}
}

// FuzzTextDelta: an Anthropic delta read by plainTextDelta is the text
// delta json.Unmarshal reads (SPEC POOL-21: the streamed text unchanged).
func FuzzTextDelta(f *testing.F) {
	for _, s := range jsonStringSeeds {
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
