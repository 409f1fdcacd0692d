package api

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// toolArgs is a tool call's arguments with escapes, a surrogate pair and
// multi-byte characters: split points land mid-escape ("\" | "u00e9"),
// mid-number and mid-token.
const toolArgs = `{"path":"a\"b\\c\u00e9 ü 😀\ud83d\ude00","n":12345,"ok":true}`

// argsStream is a tool-call stream of api whose arguments arrive in frags.
func argsStream(api apikind.Kind, frags []string) []sseEv {
	switch api {
	case apikind.Anthropic:
		out := []sseEv{ev("message_start", anStart),
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"call_1","name":"f","input":{}}}`)}
		for _, f := range frags {
			out = append(out, ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+string(wirefmt.MustJSON(f))+`}}`))
		}
		return append(out, ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
			ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":1}}`),
			ev("message_stop", `{"type":"message_stop"}`))
	case apikind.Chat:
		out := []sseEv{chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]}`)}
		for _, f := range frags {
			out = append(out, chunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+string(wirefmt.MustJSON(f))+`}}]}`))
		}
		return append(out, dt(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`), done)
	case apikind.Responses:
		out := append(rsHead(), ev("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"call_1","name":"f","arguments":""}}`))
		for _, f := range frags {
			out = append(out, ev("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","output_index":0,"delta":`+string(wirefmt.MustJSON(f))+`}`))
		}
		return append(out, ev("response.output_item.done", `{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call"}}`),
			ev("response.completed", `{"type":"response.completed","response":{"status":"completed"}}`))
	}
	return nil
}

// argsOut extracts the tool call arguments a client of api received.
func argsOut(t *testing.T, api apikind.Kind, evs []sseEv) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		if e.data == "[DONE]" {
			continue
		}
		var m struct {
			Type    string          `json:"type"`
			Delta   json.RawMessage `json:"delta"`
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Function struct {
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
			Candidates []struct {
				Content *struct {
					Parts []struct {
						FunctionCall *struct {
							Args json.RawMessage `json:"args"`
						} `json:"functionCall"`
					} `json:"parts"`
				} `json:"content"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal([]byte(e.data), &m); err != nil {
			t.Fatalf("client event not JSON: %v: %s", err, e.data)
		}
		switch api {
		case apikind.Anthropic:
			var d struct {
				PartialJSON string `json:"partial_json"`
			}
			_ = json.Unmarshal(m.Delta, &d)
			b.WriteString(d.PartialJSON)
		case apikind.Chat:
			for _, c := range m.Choices {
				for _, tc := range c.Delta.ToolCalls {
					b.WriteString(tc.Function.Arguments)
				}
			}
		case apikind.Responses:
			if m.Type == "response.function_call_arguments.delta" {
				var d string
				_ = json.Unmarshal(m.Delta, &d)
				b.WriteString(d)
			}
		case apikind.Gemini:
			for _, c := range m.Candidates {
				if c.Content == nil {
					continue
				}
				for _, p := range c.Content.Parts {
					if p.FunctionCall != nil {
						b.Write(p.FunctionCall.Args)
					}
				}
			}
		}
	}
	return b.String()
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return string(wirefmt.MustJSON(x)) == string(wirefmt.MustJSON(y))
}

func TestStreamToolArgsSplitAnywhere(t *testing.T) {
	var splits [][]string
	for i := 1; i < len(toolArgs); i++ {
		if utf8.RuneStart(toolArgs[i]) { // JSON strings carry whole characters
			splits = append(splits, []string{toolArgs[:i], toolArgs[i:]})
		}
	}
	var bytewise []string
	for _, r := range toolArgs {
		bytewise = append(bytewise, string(r))
	}
	splits = append(splits, bytewise)
	for _, from := range []apikind.Kind{apikind.Anthropic, apikind.Chat, apikind.Responses} {
		for _, to := range apis {
			t.Run(fmt.Sprintf("POOL-21/stream/tool-args-split/%s-to-%s", from, to), func(t *testing.T) {
				for _, frags := range splits {
					got, err := runStream(t, from, to, argsStream(from, frags))
					if err != nil {
						t.Fatalf("split %q: %v", frags, err)
					}
					args := argsOut(t, to, got)
					if to == apikind.Gemini {
						if !sameJSON(args, toolArgs) {
							t.Fatalf("split %q: gemini args %s", frags, args)
						}
					} else if args != toolArgs {
						t.Fatalf("split %q: args %q, want %q", frags, args, toolArgs)
					}
				}
			})
		}
	}
}

func TestStreamCases(t *testing.T) {
	overloaded := ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	textStart := []sseEv{ev("message_start", anStart),
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`)}
	cases := []struct {
		name     string
		from, to apikind.Kind
		in, want []sseEv
		wantErr  string
	}{
		{name: "POOL-21/stream-error/anthropic-overloaded-to-chat", from: apikind.Anthropic, to: apikind.Chat,
			in: append(textStart, overloaded),
			want: []sseEv{chunk(`{"role":"assistant","content":""}`), chunk(`{"content":"Hi"}`),
				dt(`{"error":{"message":"Overloaded","type":"server_error","param":null,"code":"overloaded_error"}}`)}},
		{name: "POOL-21/stream-error/anthropic-overloaded-to-responses", from: apikind.Anthropic, to: apikind.Responses,
			in: append(textStart[:1:1], overloaded),
			want: append(rsHead(),
				ev("error", `{"type":"error","sequence_number":2,"code":"overloaded_error","message":"Overloaded","param":null}`),
				ev("response.failed", `{"type":"response.failed","sequence_number":3,"response":{"object":"response","status":"failed","model":"m","output":[],
					"usage":null,"incomplete_details":null,"error":{"code":"overloaded_error","message":"Overloaded"}}}`))},
		{name: "POOL-21/stream-error/anthropic-overloaded-to-gemini", from: apikind.Anthropic, to: apikind.Gemini,
			in:   append(textStart[:1:1], overloaded),
			want: []sseEv{dt(`{"error":{"code":503,"message":"Overloaded","status":"UNAVAILABLE"}}`)}},
		{name: "POOL-21/stream-error/chat-error-chunk-to-anthropic", from: apikind.Chat, to: apikind.Anthropic,
			in: []sseEv{chunk(`{"role":"assistant","content":""}`), dt(`{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)},
			want: []sseEv{ev("message_start", anStart),
				ev("error", `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)}},
		{name: "POOL-21/stream-error/responses-failed-to-anthropic", from: apikind.Responses, to: apikind.Anthropic,
			in: append(rsHead(), ev("response.failed", `{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}`)),
			want: []sseEv{ev("message_start", anStart),
				ev("error", `{"type":"error","error":{"type":"api_error","message":"boom"}}`)}},
		{name: "POOL-21/stream-error/gemini-error-chunk-to-chat", from: apikind.Gemini, to: apikind.Chat,
			in:   []sseEv{dt(`{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}`)},
			want: []sseEv{dt(`{"error":{"message":"quota","type":"rate_limit_exceeded","param":null,"code":"RESOURCE_EXHAUSTED"}}`)}},
		{name: "POOL-21/stream/chat-without-done-ends-at-eof", from: apikind.Chat, to: apikind.Anthropic,
			in: []sseEv{chunk(`{"content":"x"}`), dt(`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`)},
			want: []sseEv{ev("message_start", anStart),
				ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
				ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`),
				ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
				ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"input_tokens":0,"output_tokens":0}}`),
				ev("message_stop", `{"type":"message_stop"}`)}},
		{name: "POOL-21/stream/anthropic-thinking-signature-and-redacted-round-trip", from: apikind.Anthropic, to: apikind.Anthropic,
			in: []sseEv{ev("message_start", anStart),
				ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
				ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a"}}`),
				ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}`),
				ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
				ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"RED"}}`),
				ev("content_block_stop", `{"type":"content_block_stop","index":1}`),
				ev("ping", `{"type":"ping"}`),
				ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":0,"output_tokens":0}}`),
				ev("message_stop", `{"type":"message_stop"}`)}},
		{name: "POOL-21/stream/chat-interleaved-tool-arguments-refused", from: apikind.Chat, to: apikind.Anthropic,
			in: []sseEv{chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":""}}]}`),
				chunk(`{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":""}}]}`),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}`)},
			wantErr: "stream.choices[0].delta.tool_calls[0]"},
		{name: "POOL-21/stream/anthropic-cut-before-message-stop", from: apikind.Anthropic, to: apikind.Chat,
			in: textStart, wantErr: "stream"},
		{name: "POOL-21/stream/gemini-cut-before-finish", from: apikind.Gemini, to: apikind.Anthropic,
			in: []sseEv{gmChunk(`[{"text":"x"}]`)}, wantErr: "stream"},
		{name: "POOL-21/stream/gemini-prompt-blocked", from: apikind.Gemini, to: apikind.Chat,
			in: []sseEv{dt(`{"promptFeedback":{"blockReason":"SAFETY"}}`)},
			want: []sseEv{chunk(`{"role":"assistant","content":""}`),
				dt(`{"object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}],
					"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":0}}}`), done}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := runStream(t, c.from, c.to, c.in)
			if c.wantErr != "" {
				if fieldOf(err) != c.wantErr {
					t.Fatalf("error %v, want a FieldError naming %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			if want == nil {
				want = c.in
			}
			sameEvents(t, got, want)
		})
	}
}

func TestStreamPing(t *testing.T) {
	t.Run("POOL-7/ping-forwarded-as-comment", func(t *testing.T) {
		s := NewStream(apikind.Anthropic, apikind.Chat, "m")
		b, err := s.Feed("ping", []byte(`{"type":"ping"}`))
		if err != nil || string(b) != ": ping\n\n" {
			t.Fatalf("%q %v", b, err)
		}
	})
	t.Run("POOL-21/responses-encrypted-reasoning-reaches-responses-client", func(t *testing.T) {
		in := append(rsHead(),
			ev("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}`),
			ev("response.output_item.done", `{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"ENC"}}`),
			ev("response.completed", `{"type":"response.completed","response":{"status":"completed"}}`))
		got, err := runStream(t, apikind.Responses, apikind.Responses, in)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got[3].data, `"encrypted_content":"ENC"`) || got[3].name != "response.output_item.done" {
			t.Fatalf("%+v", got)
		}
	})
}
