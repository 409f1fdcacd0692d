package chat

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/internal/wiretest"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// FuzzPlainContentChunk: a Chat chunk read by plainContentChunk is what
// json.Unmarshal gives the Chat decoder: id, model, one choice whose delta
// has only the content text, no finish reason, usage, error, reasoning or
// tool calls (SPEC POOL-21).
func FuzzPlainContentChunk(f *testing.F) {
	for _, s := range wiretest.StringSeeds {
		b, _ := json.Marshal(s)
		f.Add([]byte(`{"id":"c","object":"completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`))
	}
	for _, s := range []string{`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"system_fingerprint":null}`,
		`{"id":"c","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}`,
		`{"id":"c","choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}`,
		`{"id":"c","ID":"d","choices":[{"delta":{"content":"a"}}]}`,
		`{"id":"c","id":"d","choices":[{"delta":{"content":"a"}}]}`,
		`{"id":"c","choices":[{"delta":{"content":"a","Content":"b"}}]}`,
		`{"choices":[{"delta":{"content":"a"}}],"usage":null}`,
		`{"created":-1,"choices":[{"delta":{}}]}`, `{"choices":[{"delta":{"content":"a"}}]}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, ok := plainContentChunk(in)
		if !ok {
			return
		}
		var c chatResponse
		if err := json.Unmarshal(in, &c); err != nil {
			t.Fatalf("plainContentChunk(%q) = %+v, but json.Unmarshal fails: %v", in, got, err)
		}
		if c.ID != string(got.Id) || c.Model != string(got.Model) || c.Usage != nil || c.Error != nil || len(c.Choices) != 1 {
			t.Fatalf("plainContentChunk(%q) = %+v, json.Unmarshal = %+v", in, got, c)
		}
		ch := c.Choices[0]
		if ch.Delta == nil || ch.FinishReason != nil || ch.Message != nil {
			t.Fatalf("plainContentChunk(%q): choice %+v", in, ch)
		}
		want := ""
		if len(ch.Delta.Content) > 0 {
			var ok bool
			if want, ok = wirefmt.PlainString(ch.Delta.Content); !ok {
				t.Fatalf("plainContentChunk(%q): content %s", in, ch.Delta.Content)
			}
		}
		dl := *ch.Delta
		dl.Role, dl.Content = "", nil
		if got.Content != want || !reflect.DeepEqual(dl, chatMessage{}) {
			t.Fatalf("plainContentChunk(%q) = %q, json.Unmarshal = %q, delta %+v", in, got.Content, want, dl)
		}
	})
}

// TestStreamFastPaths: the usual text chunks of scenario 7's mock channel
// (bench/poolmock.go) and of OpenAI's own server take the fast path, and
// the decoder's events are the same either way (SPEC POOL-21).
func TestStreamFastPaths(t *testing.T) {
	for _, in := range []string{
		`{"id":"chatcmpl-bench","object":"completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"completion.chunk","created":1700000000,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":null}]}`,
	} {
		t.Run("POOL-21/chat-content-chunk-fast", func(t *testing.T) {
			if _, ok := plainContentChunk([]byte(in)); !ok {
				t.Fatalf("%s does not take the fast path", in)
			}
		})
	}
	t.Run("POOL-21/chat-decode-same-events", func(t *testing.T) {
		first := `{"id":"chatcmpl-1","object":"completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
		delta := `{"id":"chatcmpl-1","object":"completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`
		fast := newChatStreamDecoder()
		var got []neutral.Event
		for _, d := range []string{first, delta, delta} {
			evs, err := fast.Decode("", []byte(d))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, evs...)
		}
		want := []neutral.Event{{Kind: neutral.EvStart, ID: "chatcmpl-1", Model: "m"}, {Kind: neutral.EvPartStart, Index: 0, Part: neutral.Part{Kind: neutral.KindText}},
			{Kind: neutral.EvDelta, Index: 0, Part: neutral.Part{Kind: neutral.KindText, Text: "hi"}}, {Kind: neutral.EvDelta, Index: 0, Part: neutral.Part{Kind: neutral.KindText, Text: "hi"}}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("events %+v, want %+v", got, want)
		}
	})
}

// TestStreamDeltaEncodersMatchMarshal: the hand-written text-delta events
// carry what the json.Marshal forms carried, byte for byte for Chat
// chunks.
func TestStreamDeltaEncodersMatchMarshal(t *testing.T) {
	for _, s := range wiretest.StringSeeds[1:] {
		t.Run("POOL-21/chat-text-chunk", func(t *testing.T) {
			e := &chatStreamEncoder{Model: `m<"x">`, Id: "chatcmpl-&1", Created: 1700000000}
			for field, d := range map[string]chatDeltaOut{"content": {Content: &s}, "reasoning_content": {ReasoningContent: &s}} {
				if got, want := e.TextChunk([]byte("prev"), field, s), e.Chunk(d, nil, nil); string(got) != "prev"+string(want) {
					t.Errorf("%s %q:\n got %s\nwant %s", field, s, got, want)
				}
			}
		})
	}
}

// FuzzSystemArray: the system prompts a Chat request's content hash covers
// are the bytes json.Marshal wrote for them (SPEC POOL-5: a session keeps
// its identity across the change), for any list of JSON values.
func FuzzSystemArray(f *testing.F) {
	for _, s := range []string{`"Be brief."`, `"<tag> & amp"`, "\"line\u2028sep\"", `"a\u2029b"`, `["x",{"a":1}]`,
		`{"b": 2, "a":[1, 2]}`, `"bad \xff utf-8"`, `null`, `"\\u003c"`} {
		f.Add([]byte(s), []byte(`"second"`))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var sys []json.RawMessage
		for _, v := range [][]byte{a, b} {
			if !json.Valid(v) {
				return
			}
			sys = append(sys, json.RawMessage(bytes.TrimSpace(v)))
		}
		want, _ := json.Marshal(sys)
		if got := systemArray(sys); !bytes.Equal(got, want) {
			t.Fatalf("systemArray(%q) = %s, json.Marshal = %s", sys, got, want)
		}
	})
}
