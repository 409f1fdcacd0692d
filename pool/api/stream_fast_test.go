package api

import (
	"bytes"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

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
