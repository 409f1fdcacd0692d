package api

import (
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// reqCase is one direction of a conversion whose two sides are not each
// other's canonical form (lossy mappings, defaults, errors).
type reqCase struct {
	name     string
	from, to apikind.Kind
	in       string
	want     string // JSON; "" when wantErr is set
	wantErr  string // the FieldError's field
}

var reqCases = []reqCase{
	{name: "POOL-21/tool-result-error/anthropic-to-chat", from: apikind.Anthropic, to: apikind.Chat,
		in: `{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","is_error":true,"content":"file not found"}]}]}`,
		want: `{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c1","content":"Error: file not found"}]}`},
	{name: "POOL-21/tool-result-error/anthropic-to-responses", from: apikind.Anthropic, to: apikind.Responses,
		in:   `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","is_error":true,"content":"boom"}]}]}`,
		want: `{"model":"m","max_output_tokens":5,"input":[{"type":"function_call_output","call_id":"c1","output":"Error: boom"}]}`},
	{name: "POOL-21/tool-result-error/anthropic-to-gemini", from: apikind.Anthropic, to: apikind.Gemini,
		in: `{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"f","input":{"a":"é"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","is_error":true,"content":"boom"}]}]}`,
		want: `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{"a":"é"}},"thoughtSignature":"skip_thought_signature_validator"}]},
			{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"error":"boom"}}}]}],"generationConfig":{"maxOutputTokens":5}}`},
	{name: "POOL-21/tool-result-error/gemini-to-anthropic", from: apikind.Gemini, to: apikind.Anthropic,
		in: `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"error":"boom"}}}]}]}`,
		want: `{"model":"m","max_tokens":32000,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"call_gemini_1","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_gemini_1","is_error":true,"content":[{"type":"text","text":"boom"}]}]}]}`},
	{name: "POOL-21/system/chat-system-and-developer-hoisted", from: apikind.Chat, to: apikind.Anthropic,
		in:   `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"A"},{"role":"user","content":"x"},{"role":"developer","content":[{"type":"text","text":"B"}]}]}`,
		want: `{"model":"m","max_tokens":5,"system":"A\n\nB","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`},
	{name: "POOL-21/system/anthropic-system-role-message-hoisted", from: apikind.Anthropic, to: apikind.Chat,
		in:   `{"model":"m","max_tokens":5,"system":"A","messages":[{"role":"user","content":"x"},{"role":"system","content":[{"type":"text","text":"B"}]}]}`,
		want: `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"A\n\nB"},{"role":"user","content":"x"}]}`},
	{name: "POOL-21/system/anthropic-blocks-and-string-content", from: apikind.Anthropic, to: apikind.Chat,
		in:   `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"A","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"x"}]}`,
		want: `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"A"},{"role":"user","content":"x"}]}`},
	{name: "POOL-21/reasoning/anthropic-thinking-history-to-chat-reasoning-content", from: apikind.Anthropic, to: apikind.Chat,
		in:   `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"y"}]}]}`,
		want: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y","reasoning_content":"hmm"}]}`},
	{name: "POOL-21/reasoning/unsigned-reasoning-dropped-for-anthropic", from: apikind.Chat, to: apikind.Anthropic,
		in:   `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y","reasoning_content":"hmm"}]}`,
		want: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]},{"role":"assistant","content":[{"type":"text","text":"y"}]}]}`},
	{name: "POOL-21/reasoning/responses-encrypted-round-trip", from: apikind.Responses, to: apikind.Responses,
		in:   `{"model":"m","input":[{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":"ENC"},{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}]}`,
		want: `{"model":"m","input":[{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":"ENC"},{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}]}`},
	{name: "POOL-21/reasoning/responses-encrypted-dropped-for-gemini", from: apikind.Responses, to: apikind.Gemini,
		in:   `{"model":"m","input":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"ENC"},{"type":"message","role":"user","content":"x"}]}`,
		want: `{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`},
	{name: "POOL-21/effort/max-to-chat-xhigh", from: apikind.Anthropic, to: apikind.Chat,
		in:   `{"model":"m","max_tokens":5,"messages":[],"output_config":{"effort":"max"},"thinking":{"type":"adaptive"}}`,
		want: `{"model":"m","max_tokens":5,"messages":null,"reasoning_effort":"xhigh"}`},
	{name: "POOL-21/effort/xhigh-budget-clamped-below-max-tokens", from: apikind.Chat, to: apikind.Anthropic,
		in:   `{"model":"m","max_tokens":4000,"messages":[],"reasoning_effort":"xhigh"}`,
		want: `{"model":"m","max_tokens":4000,"messages":null,"thinking":{"type":"enabled","budget_tokens":3999}}`},
	{name: "POOL-21/effort/none-disables-thinking", from: apikind.Responses, to: apikind.Anthropic,
		in:   `{"model":"m","input":"x","reasoning":{"effort":"none"}}`,
		want: `{"model":"m","max_tokens":32000,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"thinking":{"type":"disabled"}}`},
	{name: "POOL-21/effort/gemini-budget-zero-to-gemini", from: apikind.Anthropic, to: apikind.Gemini,
		in:   `{"model":"m","max_tokens":5,"messages":[],"thinking":{"type":"disabled"}}`,
		want: `{"contents":[],"generationConfig":{"maxOutputTokens":5,"thinkingConfig":{"thinkingBudget":0}}}`},
	{name: "POOL-21/tools/parallel-disabled-anthropic-to-chat", from: apikind.Anthropic, to: apikind.Chat,
		in:   `{"model":"m","max_tokens":5,"messages":[],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`,
		want: `{"model":"m","max_tokens":5,"messages":null,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required","parallel_tool_calls":false}`},
	{name: "POOL-21/tools/parallel-disabled-chat-to-anthropic", from: apikind.Chat, to: apikind.Anthropic,
		in:   `{"model":"m","max_tokens":5,"messages":[],"tools":[{"type":"function","function":{"name":"f"}}],"parallel_tool_calls":false}`,
		want: `{"model":"m","max_tokens":5,"messages":null,"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`},
	{name: "POOL-21/stream/chat-asks-for-usage", from: apikind.Anthropic, to: apikind.Chat,
		in:   `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"x"}]}`,
		want: `{"model":"m","max_tokens":5,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`},
	{name: "POOL-21/gemini/snake-case-accepted", from: apikind.Gemini, to: apikind.Chat,
		in: `{"system_instruction":{"parts":[{"text":"S"}]},"contents":[{"role":"user","parts":[{"inline_data":{"mime_type":"image/jpeg","data":"AA=="}}]}],
			"generation_config":{"max_output_tokens":7},"tools":[{"function_declarations":[{"name":"f","parameters":{"type":"OBJECT","properties":{"the_arg":{"type":"STRING"}}}}]}]}`,
		want: `{"model":"m","max_tokens":7,"messages":[{"role":"system","content":"S"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,AA=="}}]}],
			"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"the_arg":{"type":"string"}}}}}]}`},
	{name: "POOL-21/format/json-object-not-expressible-on-anthropic", from: apikind.Chat, to: apikind.Anthropic,
		in: `{"model":"m","messages":[],"response_format":{"type":"json_object"}}`, wantErr: "response_format.type"},
	{name: "POOL-21/format/json-object-chat-to-gemini", from: apikind.Chat, to: apikind.Gemini,
		in:   `{"model":"m","messages":[],"response_format":{"type":"json_object"}}`,
		want: `{"contents":[],"generationConfig":{"responseMimeType":"application/json"}}`},
	{name: "POOL-21/error/anthropic-server-tool", from: apikind.Anthropic, to: apikind.Chat,
		in: `{"model":"m","max_tokens":5,"messages":[],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`, wantErr: "tools[0].type"},
	{name: "POOL-21/error/anthropic-document-block", from: apikind.Anthropic, to: apikind.Chat,
		in: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{}}]}]}`, wantErr: "messages[0].content[0].type"},
	{name: "POOL-21/error/anthropic-unknown-top-level-key", from: apikind.Anthropic, to: apikind.Chat,
		in: `{"model":"m","max_tokens":5,"messages":[],"mcp_servers":[{}]}`, wantErr: "mcp_servers"},
	{name: "POOL-21/error/responses-previous-response-id", from: apikind.Responses, to: apikind.Anthropic,
		in: `{"model":"m","input":"x","previous_response_id":"resp_1"}`, wantErr: "previous_response_id"},
	{name: "POOL-21/error/responses-builtin-tool", from: apikind.Responses, to: apikind.Chat,
		in: `{"model":"m","input":"x","tools":[{"type":"web_search"}]}`, wantErr: "tools[0].type"},
	{name: "POOL-21/error/chat-n-2", from: apikind.Chat, to: apikind.Anthropic,
		in: `{"model":"m","messages":[],"n":2}`, wantErr: "n"},
	{name: "POOL-21/error/chat-logprobs", from: apikind.Chat, to: apikind.Anthropic,
		in: `{"model":"m","messages":[],"logprobs":true}`, wantErr: "logprobs"},
	{name: "POOL-21/error/gemini-google-search", from: apikind.Gemini, to: apikind.Chat,
		in: `{"contents":[],"tools":[{"googleSearch":{}}]}`, wantErr: "tools[0].googleSearch"},
	{name: "POOL-21/error/gemini-audio-part", from: apikind.Gemini, to: apikind.Chat,
		in: `{"contents":[{"parts":[{"inlineData":{"mimeType":"audio/wav","data":"AA=="}}]}]}`, wantErr: "contents[0].parts[0].inlineData.mimeType"},
	{name: "POOL-21/error/image-in-tool-result-to-chat", from: apikind.Anthropic, to: apikind.Chat,
		in:      `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]}]}`,
		wantErr: "messages[0].content[0].content"},
	{name: "POOL-21/error/url-image-without-type-to-gemini", from: apikind.Chat, to: apikind.Gemini,
		in:      `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/img"}}]}]}`,
		wantErr: "messages[0].content[0].url"},
	{name: "POOL-21/error/top-k-to-responses", from: apikind.Anthropic, to: apikind.Responses,
		in: `{"model":"m","max_tokens":5,"messages":[],"top_k":5}`, wantErr: "top_k"},
	{name: "POOL-21/error/wrong-type-names-field", from: apikind.Chat, to: apikind.Anthropic,
		in: `{"model":"m","messages":[],"max_tokens":"many"}`, wantErr: "max_tokens"},
}

func TestRequestCases(t *testing.T) {
	for _, c := range reqCases {
		t.Run(c.name, func(t *testing.T) {
			r, err := decodeReq(t, c.from, c.in)
			var got []byte
			if err == nil {
				got, err = EncodeRequest(c.to, r)
			}
			if c.wantErr != "" {
				if fieldOf(err) != c.wantErr {
					t.Fatalf("error %v, want a FieldError naming %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g, w := normalize(t, got), normalize(t, []byte(c.want)); g != w {
				t.Errorf("got  %s\nwant %s", g, w)
			}
		})
	}
}

func TestCustomTools(t *testing.T) {
	req := `{"model":"m","input":[{"type":"additional_tools","role":"developer","tools":[{"type":"namespace","name":"functions","tools":[
		{"type":"custom","name":"exec","description":"run JS","format":{"type":"grammar"}},{"type":"function","name":"wait","parameters":{"type":"object"}}]}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]},
		{"type":"custom_tool_call","call_id":"c1","name":"exec","input":"tools.ls()"},
		{"type":"custom_tool_call_output","call_id":"c1","output":"a.go"}]}`
	r, err := DecodeRequest(apikind.Responses, []byte(req), "", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("POOL-21/codex-custom-and-namespace-tools-to-anthropic", func(t *testing.T) {
		got, err := EncodeRequest(apikind.Anthropic, r)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"model":"m","max_tokens":32000,"messages":[{"role":"user","content":[{"type":"text","text":"go"}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"exec","input":{"input":"tools.ls()"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"a.go"}]}]}],
			"tools":[{"name":"exec","description":"run JS","input_schema":{"type":"object","properties":{"input":{"type":"string","description":"the tool's freeform input"}},"required":["input"]}},{"name":"wait","input_schema":{"type":"object"}}]}`
		if g, w := normalize(t, got), normalize(t, []byte(want)); g != w {
			t.Fatalf("got  %s\nwant %s", g, w)
		}
	})
	if c := r.CustomTools(); len(c) != 1 || c[0] != "exec" {
		t.Fatalf("custom tools %v", c)
	}
	answer := &neutral.Response{Parts: []neutral.Part{{Kind: neutral.KindToolCall, CallID: "call_9", Name: "exec", Args: `{"input":"tools.cat(\"a\")"}`}}, Stop: neutral.StopToolUse}
	t.Run("POOL-21/custom-tool-call-back-to-responses-client", func(t *testing.T) {
		b, err := EncodeResponse(apikind.Responses, answer, "m", r.CustomTools()...)
		if err != nil || !strings.Contains(string(b), `"type":"custom_tool_call"`) || !strings.Contains(string(b), `"input":"tools.cat(\"a\")"`) {
			t.Fatalf("%v %s", err, b)
		}
	})
	t.Run("POOL-21/custom-tool-call-streamed-to-responses-client", func(t *testing.T) {
		s := NewStream(apikind.Anthropic, apikind.Responses, "m", r.CustomTools()...)
		var out []byte
		for _, e := range argsStream(apikind.Anthropic, []string{`{"input":"tools.`, `cat(\"a\")"}`}) {
			e.data = strings.Replace(e.data, `"name":"f"`, `"name":"exec"`, 1)
			b, err := s.Feed(e.name, []byte(e.data))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b...)
		}
		for _, want := range []string{`"type":"custom_tool_call"`, "event: response.custom_tool_call_input.done", `"input":"tools.cat(\"a\")"`} {
			if !strings.Contains(string(out), want) {
				t.Fatalf("missing %s in\n%s", want, out)
			}
		}
		if strings.Contains(string(out), "function_call_arguments") {
			t.Fatalf("a custom tool's call streamed as a function call:\n%s", out)
		}
	})
}
