package api

import (
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool/api/internal/wiretest"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// benchRequest is a Claude-Code-sized request: a long system prompt, 40
// turns with tool calls and results, 15 tools.
func benchRequest() string { return anBenchRequest(20) }

// anBenchRequest is benchRequest with rounds user/assistant/tool-result
// rounds (3 turns each, about 1.5 KiB).
func anBenchRequest(rounds int) string { return wiretest.AnthropicConversation(rounds) }

// chatBenchRequest is benchRequest's conversation as a Chat Completions
// request.
func chatBenchRequest() string { return wiretest.ChatConversation() }

// rsBenchRequest is anBenchRequest's conversation as a Responses request.
func rsBenchRequest(rounds int) string { return wiretest.ResponsesConversation(rounds) }

// BenchmarkRequest is the added time per call for the request: decode the
// client's body and encode the member's.
func BenchmarkRequest(b *testing.B) {
	body := []byte(benchRequest())
	for _, to := range []apikind.Kind{apikind.Chat, apikind.Responses, apikind.Gemini} {
		b.Run("anthropic-to-"+string(to), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			testkit.ReportCPU(b)
			for b.Loop() {
				r, err := DecodeRequest(apikind.Anthropic, body, "", false)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := EncodeRequest(to, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// A Chat client's request for an Anthropic member, and scenario 7's
	// shape (bench/scen_pool.go: a 16 KiB system prompt, one user turn).
	system := strings.Repeat("You are a coding agent; answer briefly. ", 16<<10/40)
	for _, c := range []struct {
		name     string
		from, to apikind.Kind
		body     string
	}{
		{"chat-to-anthropic", apikind.Chat, apikind.Anthropic, chatBenchRequest()},
		{"scen7-anthropic-to-chat", apikind.Anthropic, apikind.Chat, `{"model":"m","stream":true,"max_tokens":1024,"system":"` + system + `","messages":[{"role":"user","content":"say something"}]}`},
		{"scen7-chat-to-anthropic", apikind.Chat, apikind.Anthropic, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"say something"}]}`},
	} {
		// "-valid": the pool's call, DecodeValidRequest of a body its
		// ParseRequest validated (decoded once, not validated again).
		for _, dec := range []struct {
			suffix string
			fn     func(apikind.Kind, []byte, string, bool) (*neutral.Request, error)
		}{{"", DecodeRequest}, {"-valid", DecodeValidRequest}} {
			b.Run(c.name+dec.suffix, func(b *testing.B) {
				body := []byte(c.body)
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				testkit.ReportCPU(b)
				for b.Loop() {
					r, err := dec.fn(c.from, body, "", false)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := EncodeRequest(c.to, r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkDecodeRequest is a client's body of about 100 KiB (a coding
// agent's conversation) decoded by DecodeValidRequest into the neutral
// Request ("request": wire struct and neutral Request; each API's package
// has the one scan and json.Unmarshal of its wire struct alone).
func BenchmarkDecodeRequest(b *testing.B) {
	for _, c := range []struct {
		name string
		api  apikind.Kind
		body string
	}{
		{"anthropic", apikind.Anthropic, anBenchRequest(52)},
		{"responses", apikind.Responses, rsBenchRequest(44)},
		{"chat", apikind.Chat, chatBenchRequest()},
	} {
		body := []byte(c.body)
		b.Run(c.name+"/request", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			testkit.ReportCPU(b)
			for b.Loop() {
				if _, err := DecodeValidRequest(c.api, body, "", false); err != nil {
					b.Fatal("not decoded")
				}
			}
		})
	}
}

// BenchmarkStreamEvent is the added time per streamed event: one upstream
// text delta decoded and encoded for the client.
func BenchmarkStreamEvent(b *testing.B) {
	deltas := map[apikind.Kind]sseEv{
		apikind.Anthropic: ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there, "}}`),
		apikind.Chat:      chunk(`{"content":"Hello there, "}`),
		apikind.Responses: ev("response.output_text.delta", `{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"Hello there, "}`),
		apikind.Gemini:    gmChunk(`[{"text":"Hello there, "}]`),
	}
	opens := map[apikind.Kind][]sseEv{
		apikind.Anthropic: {ev("message_start", anStart), ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
		apikind.Chat:      {chunk(`{"role":"assistant","content":""}`)},
		apikind.Responses: append(rsHead(), ev("response.content_part.added", `{"type":"response.content_part.added"}`)),
		apikind.Gemini:    nil,
	}
	for _, from := range apis {
		for _, to := range apis {
			if from == to {
				continue
			}
			b.Run(string(from)+"-to-"+string(to), func(b *testing.B) {
				s := NewStream(from, to, "m")
				for _, e := range opens[from] {
					if _, err := s.Feed(e.name, []byte(e.data)); err != nil {
						b.Fatal(err)
					}
				}
				d := deltas[from]
				data := []byte(d.data)
				b.ReportAllocs()
				testkit.ReportCPU(b)
				for b.Loop() {
					if _, err := s.Feed(d.name, data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkEncodeRequest is the member's request written from the neutral
// form (json.Marshal of a 16 KiB prompt): scenario 7's bodies.
func BenchmarkEncodeRequest(b *testing.B) {
	system := strings.Repeat("You are a coding agent; answer briefly. ", 16<<10/40)
	for _, c := range []struct {
		name     string
		from, to apikind.Kind
		body     string
	}{
		{"scen7-anthropic-to-chat", apikind.Anthropic, apikind.Chat, `{"model":"m","stream":true,"max_tokens":1024,"system":"` + system + `","messages":[{"role":"user","content":"say something"}]}`},
		{"scen7-chat-to-anthropic", apikind.Chat, apikind.Anthropic, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"say something"}]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			r, err := DecodeValidRequest(c.from, []byte(c.body), "", false)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			testkit.ReportCPU(b)
			for b.Loop() {
				if _, err := EncodeRequest(c.to, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
