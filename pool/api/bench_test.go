package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool/api/anthropic"
	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/responses"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// benchRequest is a Claude-Code-sized request: a long system prompt, 40
// turns with tool calls and results, 15 tools.
func benchRequest() string { return anBenchRequest(20) }

// anBenchRequest is benchRequest with rounds user/assistant/tool-result
// rounds (3 turns each, about 1.5 KiB).
func anBenchRequest(rounds int) string {
	var b strings.Builder
	b.WriteString(`{"model":"m","max_tokens":32000,"stream":true,"system":` + string(wirefmt.MustJSON(strings.Repeat("You are a coding agent. ", 400))) + `,"messages":[`)
	for i := 0; i < rounds; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"role":"user","content":[{"type":"text","text":%q}]},`, strings.Repeat("please edit the file ", 30))
		fmt.Fprintf(&b, `{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t%d","name":"Edit","input":{"path":"a.go","text":%q}}]},`, i, strings.Repeat("x := 1\n", 40))
		fmt.Fprintf(&b, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":%q}]}`, i, strings.Repeat("line\n", 60))
	}
	b.WriteString(`],"tools":[`)
	for i := 0; i < 15; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"Tool%d","description":%q,"input_schema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}}`, i, strings.Repeat("does things ", 40))
	}
	b.WriteString(`]}`)
	return b.String()
}

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

// chatBenchRequest is benchRequest's conversation as a Chat Completions
// request: system message, tool calls and "tool" results, 15 functions.
func chatBenchRequest() string {
	var b strings.Builder
	b.WriteString(`{"model":"m","max_tokens":32000,"stream":true,"messages":[{"role":"system","content":` + string(wirefmt.MustJSON(strings.Repeat("You are a coding agent. ", 400))) + `}`)
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, `,{"role":"user","content":[{"type":"text","text":%q}]}`, strings.Repeat("please edit the file ", 30))
		fmt.Fprintf(&b, `,{"role":"assistant","content":"ok","tool_calls":[{"id":"t%d","type":"function","function":{"name":"Edit","arguments":%q}}]}`, i, `{"path":"a.go","text":`+string(wirefmt.MustJSON(strings.Repeat("x := 1\n", 40)))+`}`)
		fmt.Fprintf(&b, `,{"role":"tool","tool_call_id":"t%d","content":%q}`, i, strings.Repeat("line\n", 60))
	}
	b.WriteString(`],"tools":[`)
	for i := 0; i < 15; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"type":"function","function":{"name":"Tool%d","description":%q,"parameters":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}}}`, i, strings.Repeat("does things ", 40))
	}
	b.WriteString(`]}`)
	return b.String()
}

// rsBenchRequest is anBenchRequest's conversation as a Responses request:
// instructions, input items (messages, function calls and their outputs,
// reasoning) and 15 function tools.
func rsBenchRequest(rounds int) string {
	var b strings.Builder
	b.WriteString(`{"model":"m","max_output_tokens":32000,"stream":true,"instructions":` + string(wirefmt.MustJSON(strings.Repeat("You are a coding agent. ", 400))) + `,"input":[`)
	for i := 0; i < rounds; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]},`, strings.Repeat("please edit the file ", 30))
		fmt.Fprintf(&b, `{"type":"reasoning","id":"rs_%d","summary":[{"type":"summary_text","text":"edit it"}],"encrypted_content":%q},`, i, strings.Repeat("gAAAAB", 20))
		fmt.Fprintf(&b, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]},`)
		fmt.Fprintf(&b, `{"type":"function_call","call_id":"c%d","name":"Edit","arguments":%q},`, i, `{"path":"a.go","text":`+string(wirefmt.MustJSON(strings.Repeat("x := 1\n", 40)))+`}`)
		fmt.Fprintf(&b, `{"type":"function_call_output","call_id":"c%d","output":%q}`, i, strings.Repeat("line\n", 60))
	}
	b.WriteString(`],"tools":[`)
	for i := 0; i < 15; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"type":"function","name":"Tool%d","description":%q,"parameters":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}}`, i, strings.Repeat("does things ", 40))
	}
	b.WriteString(`]}`)
	return b.String()
}

// BenchmarkDecodeRequest is a client's body of about 100 KiB (a coding
// agent's conversation) decoded into its wire struct: "one-scan" by
// decodeValid (the pool's call for a body ParseRequest validated),
// "unmarshal" by json.Unmarshal of the same body, "request" the whole of
// DecodeValidRequest (wire struct and neutral Request).
func BenchmarkDecodeRequest(b *testing.B) {
	for _, c := range []struct {
		name string
		api  apikind.Kind
		body string
		wire func() any
	}{
		{"anthropic", apikind.Anthropic, anBenchRequest(52), func() any { return &anthropic.AnRequest{} }},
		{"responses", apikind.Responses, rsBenchRequest(44), func() any { return &responses.RsRequest{} }},
		{"chat", apikind.Chat, chatBenchRequest(), func() any { return &chat.ChatRequest{} }},
	} {
		body := []byte(c.body)
		run := func(name string, fn func() bool) {
			b.Run(c.name+"/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				testkit.ReportCPU(b)
				for b.Loop() {
					if !fn() {
						b.Fatal("not decoded")
					}
				}
			})
		}
		run("one-scan", func() bool { _, ok := decodeValidAny(body, c.wire()); return ok })
		run("unmarshal", func() bool { return json.Unmarshal(body, c.wire()) == nil })
		run("request", func() bool { _, err := DecodeValidRequest(c.api, body, "", false); return err == nil })
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
