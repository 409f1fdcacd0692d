package pool

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// cannedStream is a RoundTripper answering every call with one streamed
// answer of its API (50 text deltas), from memory: no socket, no timing,
// so a benchmark measures the pool's own work per call and per event.
type cannedStream struct{ an, chat []byte }

func newCannedStream() cannedStream {
	var an, ch strings.Builder
	an.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_b\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":4000,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n")
	ch.WriteString("data: {\"id\":\"chatcmpl-b\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n")
	for i := 0; i < 50; i++ {
		an.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"@1234567890123@ \"}}\n\n")
		ch.WriteString("data: {\"id\":\"chatcmpl-b\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"@1234567890123@ \"},\"finish_reason\":null}]}\n\n")
	}
	an.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":50}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	ch.WriteString("data: {\"id\":\"chatcmpl-b\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"id\":\"chatcmpl-b\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":4000,\"completion_tokens\":50,\"total_tokens\":4050}}\n\ndata: [DONE]\n\n")
	return cannedStream{an: []byte(an.String()), chat: []byte(ch.String())}
}

func (s cannedStream) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	b := s.an
	if strings.HasSuffix(r.URL.Path, "/chat/completions") {
		b = s.chat
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(&eventReads{b: b}), Request: r}, nil
}

// eventReads hands out one event per Read, as a channel that writes each
// event on its own (bench scenario 7's mock) is read: the pool cannot
// batch what it has not received.
type eventReads struct{ b []byte }

func (r *eventReads) Read(p []byte) (int, error) {
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

// countingWriter is an http.ResponseWriter and Flusher that keeps only
// counts: the client side costs nothing.
type countingWriter struct {
	h              http.Header
	bytes, flushes int
	status         int
}

func (w *countingWriter) Header() http.Header         { return w.h }
func (w *countingWriter) WriteHeader(s int)           { w.status = s }
func (w *countingWriter) Write(b []byte) (int, error) { w.bytes += len(b); return len(b), nil }
func (w *countingWriter) Flush()                      { w.flushes++ }

// BenchmarkPoolStreamCall is the pool's own CPU and allocation per streamed
// call: a 16 KiB request, an answer of 50 text deltas from a
// canned in-memory channel (one event per read), the client a counting writer — same API
// (pass-through after the commit point, SPEC POOL-7) and translated both
// ways (POOL-21). ns/op, cpu-ns/op (process CPU) and allocs/op are per call; divide by 50 for a
// rough per-event figure (per-call work included).
func BenchmarkPoolStreamCall(b *testing.B) {
	cfg, err := config.ParseConfig([]byte("channels:\n  an: {api: anthropic, base_url: 'http://127.0.0.1:9', api_key: sk-bench-anthropic-key}\n"+
		"  ch: {api: openai-chat, base_url: 'http://127.0.0.1:9/v1', api_key: sk-bench-chat-key}\npools:\n  pa: {members: [an]}\n  pc: {members: [ch]}\n"), nil)
	if err != nil {
		b.Fatal(err)
	}
	p := New(cfg, Options{Transport: newCannedStream(), Logger: discardLogger()})
	system := strings.Repeat("You are a coding agent; answer briefly. ", 16<<10/40)
	anBody := `{"model":"m","stream":true,"max_tokens":1024,"system":"` + system + `","messages":[{"role":"user","content":"say something"}]}`
	chBody := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"say something"}]}`
	// A Claude Code turn deep in a session: 20 earlier turns, each a
	// signed thinking block, a tool call and its result (the signature and
	// tool-id bookkeeping of SPEC POOL-18 and POOL-25 reads all of them).
	var hist strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&hist, `{"role":"assistant","content":[{"type":"thinking","thinking":"step %d: read the file first","signature":"%s"},`+
			`{"type":"tool_use","id":"toolu_%02d","name":"Read","input":{"path":"a%d.go"}}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%02d","content":"package a"}]},`, i, strings.Repeat("Ab3+", 90)+fmt.Sprint(i), i, i, i)
	}
	thBody := `{"model":"m","stream":true,"max_tokens":1024,"thinking":{"type":"adaptive"},"system":"` + system + `","messages":[{"role":"user","content":"fix it"},` +
		hist.String() + `{"role":"assistant","content":[{"type":"text","text":"done"}]},{"role":"user","content":"say something"}]}`
	for _, c := range []struct{ name, path, body, marker string }{
		{"same-api", "/pool/pa/v1/messages", anBody, "message_stop"},
		{"same-api-thinking-history", "/pool/pa/v1/messages", thBody, "message_stop"},
		{"anthropic-to-chat", "/pool/pc/v1/messages", anBody, "message_stop"},
		{"chat-to-anthropic", "/pool/pa/v1/chat/completions", chBody, ""},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := testkit.ProcessCPU()
			for b.Loop() {
				r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1"+c.path, strings.NewReader(c.body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("X-Session-Id", "bench")
				w := &countingWriter{h: http.Header{}}
				p.ServeHTTP(w, r)
				if w.status != 200 || w.flushes < 50 {
					b.Fatalf("status %d, %d flushes", w.status, w.flushes)
				}
			}
			if cpu := testkit.ProcessCPU() - cpu0; cpu0 > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
