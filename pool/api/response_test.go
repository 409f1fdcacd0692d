package api

import (
	"fmt"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// respFeatures are non-streamed answers in each API's form, compared in all
// 16 directions like reqFeatures.
var respFeatures = []reqFeature{
	{Name: "POOL-21/response/text-and-cached-usage-unicode", Forms: map[apikind.Kind]string{
		apikind.Anthropic: `{"type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Hi ✓ \"日本\""}],
			"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":90}}`,
		apikind.Chat: `{"object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hi ✓ \"日本\""},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_tokens_details":{"cached_tokens":90}}}`,
		apikind.Responses: `{"object":"response","status":"completed","model":"m","output":[{"type":"message","status":"completed","role":"assistant",
			"content":[{"type":"output_text","text":"Hi ✓ \"日本\"","annotations":[]}]}],
			"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":90},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":105},
			"incomplete_details":null,"error":null}`,
		apikind.Gemini: `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi ✓ \"日本\""}]},"finishReason":"STOP","index":0}],
			"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":5,"totalTokenCount":105,"cachedContentTokenCount":90},"modelVersion":"m"}`,
	}},
	{Name: "POOL-21/response/reasoning-and-parallel-tool-calls", Forms: map[apikind.Kind]string{
		apikind.Anthropic: `{"type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"Think…","signature":""},
			{"type":"text","text":"Calling."},{"type":"tool_use","id":"call_1","name":"f","input":{"a":1}},{"type":"tool_use","id":"call_2","name":"f","input":{"a":"ü"}}],
			"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":4}}`,
		apikind.Chat: `{"object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Calling.","reasoning_content":"Think…",
			"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},{"id":"call_2","type":"function","function":{"name":"f","arguments":"{\"a\":\"ü\"}"}}]},
			"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":0}}}`,
		apikind.Responses: `{"object":"response","status":"completed","model":"m","output":[
			{"type":"reasoning","summary":[{"type":"summary_text","text":"Think…"}]},
			{"type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Calling.","annotations":[]}]},
			{"type":"function_call","id":"fc_1","status":"completed","call_id":"call_1","name":"f","arguments":"{\"a\":1}"},
			{"type":"function_call","id":"fc_2","status":"completed","call_id":"call_2","name":"f","arguments":"{\"a\":\"ü\"}"}],
			"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":7},
			"incomplete_details":null,"error":null}`,
		apikind.Gemini: `{"candidates":[{"content":{"role":"model","parts":[{"text":"Think…","thought":true},{"text":"Calling."},
			{"functionCall":{"id":"call_1","name":"f","args":{"a":1}}},{"functionCall":{"id":"call_2","name":"f","args":{"a":"ü"}}}]},"finishReason":"STOP","index":0}],
			"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":4,"totalTokenCount":7},"modelVersion":"m"}`,
	}},
	{Name: "POOL-21/response/max-tokens-stop", Forms: map[apikind.Kind]string{
		apikind.Anthropic: `{"type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"cut"}],
			"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":2}}`,
		apikind.Chat: `{"object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"cut"},"finish_reason":"length"}],
			"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}}`,
		apikind.Responses: `{"object":"response","status":"incomplete","model":"m","output":[{"type":"message","status":"completed","role":"assistant",
			"content":[{"type":"output_text","text":"cut","annotations":[]}]}],
			"usage":{"input_tokens":1,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":3},
			"incomplete_details":{"reason":"max_output_tokens"},"error":null}`,
		apikind.Gemini: `{"candidates":[{"content":{"role":"model","parts":[{"text":"cut"}]},"finishReason":"MAX_TOKENS","index":0}],
			"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2,"totalTokenCount":3},"modelVersion":"m"}`,
	}},
}

func TestResponseMatrix(t *testing.T) {
	for _, f := range respFeatures {
		for _, from := range apis {
			for _, to := range apis {
				t.Run(fmt.Sprintf("%s/%s-to-%s", f.Name, from, to), func(t *testing.T) {
					r, err := DecodeResponse(from, []byte(f.Forms[from]))
					if err != nil {
						t.Fatalf("decode %s: %v", from, err)
					}
					got, err := EncodeResponse(to, r, "m")
					if err != nil {
						t.Fatalf("encode %s: %v", to, err)
					}
					if g, w := normalize(t, got), normalize(t, []byte(f.Forms[to])); g != w {
						t.Errorf("got  %s\nwant %s", g, w)
					}
				})
			}
		}
	}
}

func TestResponseCases(t *testing.T) {
	cases := []struct {
		name     string
		from, to apikind.Kind
		in, want string
	}{
		{"POOL-21/usage/deepseek-cache-hit-tokens-to-anthropic", apikind.Chat, apikind.Anthropic,
			`{"choices":[{"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":1,"prompt_cache_hit_tokens":60}}`,
			`{"type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","stop_sequence":null,
			"usage":{"input_tokens":40,"output_tokens":1,"cache_read_input_tokens":60}}`},
		{"POOL-21/usage/anthropic-cache-write-counts-as-prompt", apikind.Anthropic, apikind.Chat,
			`{"type":"message","content":[{"type":"text","text":"x"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":1,"cache_creation_input_tokens":20,"cache_read_input_tokens":10}}`,
			`{"object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":35,"completion_tokens":1,"total_tokens":36,"prompt_tokens_details":{"cached_tokens":10}}}`},
		{"POOL-21/usage/gemini-thoughts-are-output", apikind.Gemini, apikind.Chat,
			`{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":2,"thoughtsTokenCount":30}}`,
			`{"object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":10,"completion_tokens":32,"total_tokens":42,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":30}}}`},
		{"POOL-21/stop/anthropic-stop-sequence-kept", apikind.Anthropic, apikind.Anthropic,
			`{"type":"message","content":[{"type":"text","text":"x"}],"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":1,"output_tokens":1}}`,
			`{"type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"x"}],"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":1,"output_tokens":1}}`},
		{"POOL-21/stop/refusal-is-content-filter", apikind.Chat, apikind.Anthropic,
			`{"choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't."},"finish_reason":"stop"}]}`,
			`{"type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"I can't."}],"stop_reason":"refusal","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}`},
		{"POOL-21/stop/gemini-safety-to-chat", apikind.Gemini, apikind.Chat,
			`{"candidates":[{"content":{"parts":[]},"finishReason":"SAFETY"}]}`,
			`{"object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"content_filter"}],
			"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0}}}`},
		{"POOL-21/reasoning/responses-encrypted-reaches-responses-client", apikind.Responses, apikind.Responses,
			`{"status":"completed","output":[{"type":"reasoning","id":"rs_9","summary":[],"encrypted_content":"ENC"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]}]}`,
			`{"object":"response","status":"completed","model":"m","output":[{"type":"reasoning","summary":[],"encrypted_content":"ENC"},
			{"type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"x","annotations":[]}]}],
			"usage":{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0},
			"incomplete_details":null,"error":null}`},
		{"POOL-21/tools/gemini-call-without-id-gets-one", apikind.Gemini, apikind.Anthropic,
			`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}]},"finishReason":"STOP"}]}`,
			`{"type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"call_test","name":"f","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeResponse(c.from, []byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			got, err := EncodeResponse(c.to, r, "m")
			if err != nil {
				t.Fatal(err)
			}
			if g, w := normalize(t, got), normalize(t, []byte(c.want)); g != w {
				t.Errorf("got  %s\nwant %s", g, w)
			}
		})
	}
}
