package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// FuzzPlainContentChunk: a Chat chunk read by plainContentChunk is what
// json.Unmarshal gives the Chat decoder: id, model, one choice whose delta
// has only the content text, no finish reason, usage, error, reasoning or
// tool calls (SPEC POOL-21).
func FuzzPlainContentChunk(f *testing.F) {
	for _, s := range jsonStringSeeds {
		b, _ := json.Marshal(s)
		f.Add([]byte(`{"id":"c","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]}`))
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
		got, ok := chat.PlainContentChunk(in)
		if !ok {
			return
		}
		var c chat.ChatResponse
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
		if got.Content != want || !reflect.DeepEqual(dl, chat.ChatMessage{}) {
			t.Fatalf("plainContentChunk(%q) = %q, json.Unmarshal = %q, delta %+v", in, got.Content, want, dl)
		}
	})
}

// TestStreamFastPaths: the usual text events of scenario 7's mock channel
// (bench/poolmock.go) and of the APIs' own servers take the fast path,
// and the decoders' events are the same either way (SPEC POOL-21).
func TestStreamFastPaths(t *testing.T) {
	for _, in := range []string{
		`{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":null}]}`,
	} {
		t.Run("POOL-21/chat-content-chunk-fast", func(t *testing.T) {
			if _, ok := chat.PlainContentChunk([]byte(in)); !ok {
				t.Fatalf("%s does not take the fast path", in)
			}
		})
	}
	t.Run("POOL-21/chat-decode-same-events", func(t *testing.T) {
		first := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
		delta := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`
		fast := chat.NewChatStreamDecoder()
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

// TestStreamTextDeltaAllocs: a translated text delta between Anthropic and
// Chat costs one allocation (the text), not one per neutral event slice,
// encoded event and joined output; the bytes are what a fresh
// Stream writes for the same events (SPEC POOL-21), and one large event's
// buffer is not kept by the stream.
func TestStreamTextDeltaAllocs(t *testing.T) {
	for _, c := range []struct {
		from, to apikind.Kind
		open     []sseEv
		delta    sseEv
	}{
		{apikind.Anthropic, apikind.Chat, []sseEv{ev("message_start", anStart), ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there, "}}`)},
		{apikind.Chat, apikind.Anthropic, []sseEv{chunk(`{"role":"assistant","content":""}`)}, chunk(`{"content":"Hello there, "}`)},
	} {
		t.Run("POOL-21/"+string(c.from)+"-to-"+string(c.to)+"-text-delta", func(t *testing.T) {
			chat.Now = func() time.Time { return time.Unix(1700000000, 0) }
			defer func() { chat.Now = time.Now }()
			s := NewStream(c.from, c.to, "m")
			data := []byte(c.delta.data)
			for _, e := range append(c.open, c.delta) { // the first delta may open the part
				if _, err := s.Feed(e.name, []byte(e.data)); err != nil {
					t.Fatal(err)
				}
			}
			first, err := s.Feed(c.delta.name, data)
			if err != nil {
				t.Fatal(err)
			}
			first = bytes.Clone(first)
			if n := testing.AllocsPerRun(100, func() { _, _ = s.Feed(c.delta.name, data) }); n > 1 {
				t.Errorf("%.1f allocations per text delta, want ≤ 1", n)
			}
			again, _ := s.Feed(c.delta.name, data)
			if !bytes.Equal(again, first) || !bytes.Contains(first, []byte("Hello there, ")) {
				t.Errorf("reused buffer wrote %q, first delta %q", again, first)
			}
			big, err := s.Feed(c.delta.name, bytes.Replace(data, []byte("Hello there, "), bytes.Repeat([]byte("x"), maxKeptBuf), 1))
			if err != nil || len(big) < maxKeptBuf || s.buf != nil {
				t.Errorf("large delta: %d bytes, err %v, buffer kept %d", len(big), err, cap(s.buf))
			}
		})
	}
}
