package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

func ev(name, data string) sseEv { return sseEv{name, compact(data)} }

func dt(data string) sseEv { return sseEv{"", compact(data)} }

var done = sseEv{"", "[DONE]"}

const anStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],
	"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}}`

func rsHead() []sseEv {
	r := `{"object":"response","status":"in_progress","model":"m","output":[],"usage":null,"incomplete_details":null,"error":null}`
	return []sseEv{
		ev("response.created", `{"type":"response.created","sequence_number":0,"response":`+r+`}`),
		ev("response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":`+r+`}`),
	}
}

func chunk(delta string) sseEv {
	return dt(`{"object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`)
}

func gmChunk(parts string) sseEv {
	return dt(`{"candidates":[{"content":{"role":"model","parts":` + parts + `},"index":0}],"modelVersion":"m"}`)
}

type streamFeature struct {
	name  string
	forms map[apikind.Kind][]sseEv
}

var textMsg = `{"type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello ✓ \"q\"","annotations":[]}]}`

var streamFeatures = []streamFeature{
	{name: "POOL-21/stream/text-and-cached-usage", forms: map[apikind.Kind][]sseEv{
		apikind.Anthropic: {
			ev("message_start", anStart),
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo ✓ \"q\""}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":90}}`),
			ev("message_stop", `{"type":"message_stop"}`),
		},
		apikind.Chat: {
			chunk(`{"role":"assistant","content":""}`), chunk(`{"content":"Hel"}`), chunk(`{"content":"lo ✓ \"q\""}`),
			dt(`{"object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_tokens_details":{"cached_tokens":90}}}`),
			done,
		},
		apikind.Responses: append(rsHead(),
			ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"type":"message","status":"in_progress","role":"assistant","content":[]}}`),
			ev("response.content_part.added", `{"type":"response.content_part.added","sequence_number":3,"output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`),
			ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":4,"output_index":0,"content_index":0,"delta":"Hel","logprobs":[]}`),
			ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":5,"output_index":0,"content_index":0,"delta":"lo ✓ \"q\"","logprobs":[]}`),
			ev("response.output_text.done", `{"type":"response.output_text.done","sequence_number":6,"output_index":0,"content_index":0,"text":"Hello ✓ \"q\"","logprobs":[]}`),
			ev("response.content_part.done", `{"type":"response.content_part.done","sequence_number":7,"output_index":0,"content_index":0,"part":{"type":"output_text","text":"Hello ✓ \"q\"","annotations":[]}}`),
			ev("response.output_item.done", `{"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":`+textMsg+`}`),
			ev("response.completed", `{"type":"response.completed","sequence_number":9,"response":{"object":"response","status":"completed","model":"m","output":[`+textMsg+`],
				"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":90},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":105},
				"incomplete_details":null,"error":null}}`),
		),
		apikind.Gemini: {
			gmChunk(`[{"text":"Hel"}]`), gmChunk(`[{"text":"lo ✓ \"q\""}]`),
			dt(`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],
				"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":5,"totalTokenCount":105,"cachedContentTokenCount":90},"modelVersion":"m"}`),
		},
	}},
	{name: "POOL-21/stream/reasoning-and-parallel-tool-calls", forms: map[apikind.Kind][]sseEv{
		apikind.Anthropic: {
			ev("message_start", anStart),
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hmm…"}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
			ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_1","name":"f","input":{}}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":1}`),
			ev("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"call_2","name":"g","input":{}}}`),
			ev("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"b\":\"ü\"}"}}`),
			ev("content_block_stop", `{"type":"content_block_stop","index":2}`),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":3,"output_tokens":4}}`),
			ev("message_stop", `{"type":"message_stop"}`),
		},
		apikind.Chat: {
			chunk(`{"role":"assistant","content":""}`), chunk(`{"reasoning_content":"Hmm…"}`),
			chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}`),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]}`),
			chunk(`{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"g","arguments":""}}]}`),
			chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"{\"b\":\"ü\"}"}}]}`),
			dt(`{"object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],
				"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":0}}}`),
			done,
		},
		apikind.Responses: append(rsHead(), rsReasoningAndCalls()...),
		apikind.Gemini: {
			gmChunk(`[{"text":"Hmm…","thought":true}]`),
			gmChunk(`[{"functionCall":{"id":"call_1","name":"f","args":{"a":1}}}]`),
			gmChunk(`[{"functionCall":{"id":"call_2","name":"g","args":{"b":"ü"}}}]`),
			dt(`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],
				"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4,"totalTokenCount":7},"modelVersion":"m"}`),
		},
	}},
}

func rsReasoningAndCalls() []sseEv {
	call := func(i, seq int, id, name, args string) []sseEv {
		item := func(status, a string) string {
			return fmt.Sprintf(`{"type":"function_call","id":"fc_%s","status":"%s","call_id":"call_%s","name":"%s","arguments":%q}`, id, status, id, name, a)
		}
		return []sseEv{
			ev("response.output_item.added", fmt.Sprintf(`{"type":"response.output_item.added","sequence_number":%d,"output_index":%d,"item":%s}`, seq, i, item("in_progress", ""))),
			ev("response.function_call_arguments.delta", fmt.Sprintf(`{"type":"response.function_call_arguments.delta","sequence_number":%d,"output_index":%d,"delta":%q}`, seq+1, i, args)),
			ev("response.function_call_arguments.done", fmt.Sprintf(`{"type":"response.function_call_arguments.done","sequence_number":%d,"output_index":%d,"arguments":%q}`, seq+2, i, args)),
			ev("response.output_item.done", fmt.Sprintf(`{"type":"response.output_item.done","sequence_number":%d,"output_index":%d,"item":%s}`, seq+3, i, item("completed", args))),
		}
	}
	reasoning := `{"type":"reasoning","summary":[{"type":"summary_text","text":"Hmm…"}]}`
	out := []sseEv{
		ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"type":"reasoning","summary":[]}}`),
		ev("response.reasoning_summary_part.added", `{"type":"response.reasoning_summary_part.added","sequence_number":3,"output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}`),
		ev("response.reasoning_summary_text.delta", `{"type":"response.reasoning_summary_text.delta","sequence_number":4,"output_index":0,"summary_index":0,"delta":"Hmm…"}`),
		ev("response.reasoning_summary_text.done", `{"type":"response.reasoning_summary_text.done","sequence_number":5,"output_index":0,"summary_index":0,"text":"Hmm…"}`),
		ev("response.reasoning_summary_part.done", `{"type":"response.reasoning_summary_part.done","sequence_number":6,"output_index":0,"summary_index":0,"part":{"type":"summary_text","text":"Hmm…"}}`),
		ev("response.output_item.done", `{"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":`+reasoning+`}`),
	}
	out = append(out, call(1, 8, "1", "f", `{"a":1}`)...)
	out = append(out, call(2, 12, "2", "g", `{"b":"ü"}`)...)
	fc := func(id, name, args string) string {
		return fmt.Sprintf(`{"type":"function_call","id":"fc_%s","status":"completed","call_id":"call_%s","name":"%s","arguments":%q}`, id, id, name, args)
	}
	return append(out, ev("response.completed", `{"type":"response.completed","sequence_number":16,"response":{"object":"response","status":"completed","model":"m",
		"output":[`+reasoning+`,`+fc("1", "f", `{"a":1}`)+`,`+fc("2", "g", `{"b":"ü"}`)+`],
		"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":7},
		"incomplete_details":null,"error":null}}`))
}

// sameEvents compares event sequences after normalize.
func sameEvents(t *testing.T, got, want []sseEv) {
	t.Helper()
	n := func(evs []sseEv) string {
		var b strings.Builder
		for _, e := range evs {
			d := e.data
			if strings.HasPrefix(d, "{") {
				d = normalize(t, []byte(d))
			}
			fmt.Fprintf(&b, "%s %s\n", e.name, d)
		}
		return b.String()
	}
	if g, w := n(got), n(want); g != w {
		t.Errorf("got:\n%s\nwant:\n%s", g, w)
	}
}

func TestStreamMatrix(t *testing.T) {
	for _, f := range streamFeatures {
		for _, from := range apis {
			for _, to := range apis {
				t.Run(fmt.Sprintf("%s/%s-to-%s", f.name, from, to), func(t *testing.T) {
					got, err := runStream(t, from, to, f.forms[from])
					if err != nil {
						t.Fatal(err)
					}
					sameEvents(t, got, f.forms[to])
				})
			}
		}
	}
}
