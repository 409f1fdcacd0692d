package api

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool/api/anthropic"
	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// BenchmarkParseRequest is the pool's read of a client request:
// scenario 7's bodies (bench/scen_pool.go), a 16 KiB system prompt and one
// user turn, in each client API.
func BenchmarkParseRequest(b *testing.B) {
	system := strings.Repeat("You are a coding agent; answer briefly. ", 16<<10/40)
	for _, c := range []struct {
		name string
		fl   Flavour
		body string
	}{
		{"anthropic", anthropic.Flavour{}, `{"model":"m","stream":true,"max_tokens":1024,"system":"` + system + `","messages":[{"role":"user","content":"say something"}]}`},
		{"chat", chat.Flavour{}, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"say something"}]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := []byte(c.body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			testkit.ReportCPU(b)
			for b.Loop() {
				if _, err := c.fl.ParseRequest(neutral.Endpoint{Kind: neutral.EpGenerate}, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAnthropicWatcher is the commit-point watcher over one streamed
// Messages answer: message_start, a text block of 50 deltas,
// message_delta and message_stop, committed at the first delta.
func BenchmarkAnthropicWatcher(b *testing.B) {
	evs := []wirefmt.SSEEvent{
		{Name: "message_start", Data: []byte(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":4000,"output_tokens":1}}}`)},
		{Name: "content_block_start", Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
	}
	for range 50 {
		evs = append(evs, wirefmt.SSEEvent{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word "}}`)})
	}
	evs = append(evs, wirefmt.SSEEvent{Name: "content_block_stop", Data: []byte(`{"type":"content_block_stop","index":0}`)},
		wirefmt.SSEEvent{Name: "message_delta", Data: []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":50}}`)},
		wirefmt.SSEEvent{Name: "message_stop", Data: []byte(`{"type":"message_stop"}`)})
	b.ReportAllocs()
	testkit.ReportCPU(b)
	for b.Loop() {
		w := anthropic.Flavour{}.NewWatcher()
		committed := false
		for i := range evs {
			if w.Observe(&evs[i], committed).Verdict == neutral.VVisible {
				committed = true
			}
		}
		if w.Usage().CacheRead != 4000 || w.Usage().Output != 50 {
			b.Fatalf("usage %+v", w.Usage())
		}
	}
}

// BenchmarkCheckTopLevel is the pool's duplicate-key and type check of a
// client body before ParseRequest: scenario 7's Anthropic body.
func BenchmarkCheckTopLevel(b *testing.B) {
	system := strings.Repeat("You are a coding agent; answer briefly. ", 16<<10/40)
	body := []byte(`{"model":"m","stream":true,"max_tokens":1024,"system":"` + system + `","messages":[{"role":"user","content":"say something"}]}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	testkit.ReportCPU(b)
	for b.Loop() {
		if err := wirefmt.CheckTopLevel(body); err != nil {
			b.Fatal(err)
		}
	}
}

// oneEventReads hands out one event per Read, as scenario 7's mock writes
// them (one write(2) per event).
type oneEventReads struct{ b []byte }

func (r *oneEventReads) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := bytes.Index(r.b, []byte("\n\n")) + 2
	if n < 2 {
		n = len(r.b)
	}
	n = copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}

// BenchmarkSSEReader is the pool's read of one streamed Messages answer:
// the preamble, 50 text deltas each arriving on its own, the
// end events; Next and EventBuffered per event, as the relay calls them.
// "shared": the reader of a passed-through stream after the commit point
// (Share).
func BenchmarkSSEReader(b *testing.B) {
	b.Run("owned", func(b *testing.B) { benchSSEReader(b, false) })
	b.Run("shared", func(b *testing.B) { benchSSEReader(b, true) })
}

func benchSSEReader(b *testing.B, shared bool) {
	var s strings.Builder
	s.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_b\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":4000,\"output_tokens\":1}}}\n\n")
	for range 50 {
		s.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"@1234567890123@ \"}}\n\n")
	}
	s.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	stream := []byte(s.String())
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	testkit.ReportCPU(b)
	for b.Loop() {
		r := wirefmt.NewSSEReader(&oneEventReads{b: stream})
		if shared {
			r.Share()
		}
		n := 0
		for {
			if _, err := r.Next(); err != nil {
				break
			}
			r.EventBuffered()
			n++
		}
		r.Release()
		if n != 52 {
			b.Fatalf("%d events", n)
		}
	}
}
