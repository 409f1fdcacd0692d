package wiretest

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// Feature is one request (or answer) feature written in each API's own
// form. The translation matrix decodes every form and encodes it into every
// API (12 directions plus the 4 round trips) and compares it with that
// API's form. Errs names the field an encoder must refuse when the feature
// is not expressible there.
type Feature struct {
	Name  string
	Forms map[apikind.Kind]string
	Errs  map[apikind.Kind]string
}

// weatherSchema is the parameters schema of the tool features.
const weatherSchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

// RequestFeatures are the request features every API's decoder and encoder
// must agree on (SPEC POOL-21), each in the forms of the APIs that have it.
var RequestFeatures = []Feature{
	{Name: "POOL-21/request/system-and-multi-turn-text-unicode", Forms: map[apikind.Kind]string{
		apikind.Anthropic: `{"model":"m","max_tokens":100,"system":"Be brief.","messages":[
			{"role":"user","content":[{"type":"text","text":"Hi"}]},
			{"role":"assistant","content":[{"type":"text","text":"Hello"}]},
			{"role":"user","content":[{"type":"text","text":"Bye ✓ 日本 \"q\" \\ 😀"}]}]}`,
		apikind.Chat: `{"model":"m","max_tokens":100,"messages":[{"role":"system","content":"Be brief."},
			{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},{"role":"user","content":"Bye ✓ 日本 \"q\" \\ 😀"}]}`,
		apikind.Responses: `{"model":"m","max_output_tokens":100,"instructions":"Be brief.","input":[
			{"type":"message","role":"user","content":[{"type":"input_text","text":"Hi"}]},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello"}]},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"Bye ✓ 日本 \"q\" \\ 😀"}]}]}`,
		apikind.Gemini: `{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[
			{"role":"user","parts":[{"text":"Hi"}]},{"role":"model","parts":[{"text":"Hello"}]},
			{"role":"user","parts":[{"text":"Bye ✓ 日本 \"q\" \\ 😀"}]}],"generationConfig":{"maxOutputTokens":100}}`,
	}},
	{Name: "POOL-21/request/sampling-and-stop-sequences", Forms: map[apikind.Kind]string{
		apikind.Anthropic: `{"model":"m","max_tokens":50,"temperature":0.5,"top_p":0.9,"stop_sequences":["END"],
			"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		apikind.Chat: `{"model":"m","max_tokens":50,"temperature":0.5,"top_p":0.9,"stop":["END"],"messages":[{"role":"user","content":"x"}]}`,
		apikind.Gemini: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],
			"generationConfig":{"temperature":0.5,"topP":0.9,"maxOutputTokens":50,"stopSequences":["END"]}}`,
	}, Errs: map[apikind.Kind]string{apikind.Responses: "stop_sequences"}},
	{Name: "POOL-21/request/images-base64-and-url", Forms: map[apikind.Kind]string{
		apikind.Anthropic: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
			{"type":"image","source":{"type":"url","url":"https://example.com/cat.png"}}]}]}`,
		apikind.Chat: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},
			{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},
			{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]}`,
		apikind.Responses: `{"model":"m","max_output_tokens":10,"input":[{"type":"message","role":"user","content":[
			{"type":"input_text","text":"What is this?"},
			{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="},
			{"type":"input_image","image_url":"https://example.com/cat.png"}]}]}`,
		apikind.Gemini: `{"contents":[{"role":"user","parts":[{"text":"What is this?"},
			{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},
			{"fileData":{"mimeType":"image/png","fileUri":"https://example.com/cat.png"}}]}],"generationConfig":{"maxOutputTokens":10}}`,
	}},
	{Name: "POOL-21/request/tools-parallel-calls-and-results", Forms: map[apikind.Kind]string{
		apikind.Anthropic: `{"model":"m","max_tokens":100,"messages":[
			{"role":"user","content":[{"type":"text","text":"Weather in Paris and Rome?"}]},
			{"role":"assistant","content":[{"type":"text","text":"Checking."},
				{"type":"tool_use","id":"call_gemini_1","name":"get_weather","input":{"city":"Paris"}},
				{"type":"tool_use","id":"call_gemini_2","name":"get_weather","input":{"city":"Rome"}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"call_gemini_1","content":[{"type":"text","text":"18°C"}]},
				{"type":"tool_result","tool_use_id":"call_gemini_2","content":[{"type":"text","text":"21°C"}]},
				{"type":"text","text":"Thanks"}]}],
			"tools":[{"name":"get_weather","description":"Current weather","input_schema":` + weatherSchema + `}],
			"tool_choice":{"type":"auto"}}`,
		apikind.Chat: `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"Weather in Paris and Rome?"},
			{"role":"assistant","content":"Checking.","tool_calls":[
				{"id":"call_gemini_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
				{"id":"call_gemini_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},
			{"role":"tool","tool_call_id":"call_gemini_1","content":"18°C"},
			{"role":"tool","tool_call_id":"call_gemini_2","content":"21°C"},
			{"role":"user","content":"Thanks"}],
			"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather","parameters":` + weatherSchema + `}}],
			"tool_choice":"auto"}`,
		apikind.Responses: `{"model":"m","max_output_tokens":100,"input":[
			{"type":"message","role":"user","content":[{"type":"input_text","text":"Weather in Paris and Rome?"}]},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},
			{"type":"function_call","call_id":"call_gemini_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
			{"type":"function_call","call_id":"call_gemini_2","name":"get_weather","arguments":"{\"city\":\"Rome\"}"},
			{"type":"function_call_output","call_id":"call_gemini_1","output":"18°C"},
			{"type":"function_call_output","call_id":"call_gemini_2","output":"21°C"},
			{"type":"message","role":"user","content":[{"type":"input_text","text":"Thanks"}]}],
			"tools":[{"type":"function","name":"get_weather","description":"Current weather","parameters":` + weatherSchema + `}],
			"tool_choice":"auto"}`,
		apikind.Gemini: `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris and Rome?"}]},
			{"role":"model","parts":[{"text":"Checking."},
				{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"skip_thought_signature_validator"},
				{"functionCall":{"name":"get_weather","args":{"city":"Rome"}},"thoughtSignature":"skip_thought_signature_validator"}]},
			{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"output":"18°C"}}},
				{"functionResponse":{"name":"get_weather","response":{"output":"21°C"}}},{"text":"Thanks"}]}],
			"tools":[{"functionDeclarations":[{"name":"get_weather","description":"Current weather","parametersJsonSchema":` + weatherSchema + `}]}],
			"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}},"generationConfig":{"maxOutputTokens":100}}`,
	}},
	{Name: "POOL-21/request/named-tool-choice", Forms: map[apikind.Kind]string{
		apikind.Anthropic: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],
			"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"}}`,
		apikind.Chat: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}],
			"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		apikind.Responses: `{"model":"m","max_output_tokens":10,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}],
			"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"f"}}`,
		apikind.Gemini: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f","parametersJsonSchema":{"type":"object"}}]}],
			"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}},"generationConfig":{"maxOutputTokens":10}}`,
	}},
	{Name: "POOL-21/request/reasoning-effort", Forms: map[apikind.Kind]string{
		apikind.Anthropic: `{"model":"m","max_tokens":20000,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],
			"thinking":{"type":"enabled","budget_tokens":8192}}`,
		apikind.Chat:      `{"model":"m","max_tokens":20000,"messages":[{"role":"user","content":"x"}],"reasoning_effort":"medium"}`,
		apikind.Responses: `{"model":"m","max_output_tokens":20000,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}],"reasoning":{"effort":"medium","summary":"auto"}}`,
		apikind.Gemini: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],
			"generationConfig":{"maxOutputTokens":20000,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}}`,
	}},
	{Name: "POOL-21/request/structured-output-json-schema", Forms: map[apikind.Kind]string{
		apikind.Anthropic: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],
			"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`,
		apikind.Chat: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}],
			"response_format":{"type":"json_schema","json_schema":{"name":"output","schema":{"type":"object"}}}}`,
		apikind.Responses: `{"model":"m","max_output_tokens":10,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}],
			"text":{"format":{"type":"json_schema","name":"output","schema":{"type":"object"}}}}`,
		apikind.Gemini: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],
			"generationConfig":{"maxOutputTokens":10,"responseMimeType":"application/json","responseJsonSchema":{"type":"object"}}}`,
	}},
}

// AnthropicConversation is a Claude-Code-sized Messages request: a long
// system prompt, rounds user/assistant/tool-result rounds (3 turns each,
// about 1.5 KiB) and 15 tools.
func AnthropicConversation(rounds int) string {
	var b strings.Builder
	b.WriteString(`{"model":"m","max_tokens":32000,"stream":true,"system":` + string(mustJSON(strings.Repeat("You are a coding agent. ", 400))) + `,"messages":[`)
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

// ChatConversation is AnthropicConversation(20) as a Chat Completions
// request: system message, tool calls and "tool" results, 15 functions.
func ChatConversation() string {
	var b strings.Builder
	b.WriteString(`{"model":"m","max_tokens":32000,"stream":true,"messages":[{"role":"system","content":` + string(mustJSON(strings.Repeat("You are a coding agent. ", 400))) + `}`)
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, `,{"role":"user","content":[{"type":"text","text":%q}]}`, strings.Repeat("please edit the file ", 30))
		fmt.Fprintf(&b, `,{"role":"assistant","content":"ok","tool_calls":[{"id":"t%d","type":"function","function":{"name":"Edit","arguments":%q}}]}`, i, `{"path":"a.go","text":`+string(mustJSON(strings.Repeat("x := 1\n", 40)))+`}`)
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

// ResponsesConversation is AnthropicConversation's conversation as a
// Responses request: instructions, input items (messages, function calls
// and their outputs, reasoning) and 15 function tools.
func ResponsesConversation(rounds int) string {
	var b strings.Builder
	b.WriteString(`{"model":"m","max_output_tokens":32000,"stream":true,"instructions":` + string(mustJSON(strings.Repeat("You are a coding agent. ", 400))) + `,"input":[`)
	for i := 0; i < rounds; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]},`, strings.Repeat("please edit the file ", 30))
		fmt.Fprintf(&b, `{"type":"reasoning","id":"rs_%d","summary":[{"type":"summary_text","text":"edit it"}],"encrypted_content":%q},`, i, strings.Repeat("gAAAAB", 20))
		fmt.Fprintf(&b, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]},`)
		fmt.Fprintf(&b, `{"type":"function_call","call_id":"c%d","name":"Edit","arguments":%q},`, i, `{"path":"a.go","text":`+string(mustJSON(strings.Repeat("x := 1\n", 40)))+`}`)
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

// GeminiRequest is a generateContent body of the usual fields.
const GeminiRequest = `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]}],` +
	`"systemInstruction":{"parts":[{"text":"be brief"}]},"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT"}}]}],` +
	`"generationConfig":{"maxOutputTokens":100}}`

// DecodeValidSeeds are request bodies of every API for the one-scan
// decoders: the feature forms, the conversations and bodies that must take
// json.Unmarshal's way (escaped and non-ASCII keys, repeated arrays, type
// errors).
func DecodeValidSeeds() [][]byte {
	var out [][]byte
	for _, rf := range RequestFeatures {
		for _, api := range []apikind.Kind{apikind.Anthropic, apikind.Chat, apikind.Responses, apikind.Gemini} {
			if form, ok := rf.Forms[api]; ok {
				out = append(out, []byte(Compact(form)))
			}
		}
	}
	for _, s := range []string{AnthropicConversation(20), ChatConversation(),
		`{"model":"m","messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`,
		`{"MODEL":"m","Messages":[{"ROLE":"user","content":"x"}],"max_tokens":1}`,
		`{"mod\u0065l":"m","messages":[]}`, `{"modél":"m"}`, `{"model":1}`, `{"messages":{}}`,
		`{"messages":[null,{"role":"user","content":null}],"system":null,"model":null}`,
		`{"metadata":{"user_id":"a"},"metadata":{"x":1},"stream":true,"max_tokens":1e3}`,
		`{"model":"a\"b","system":"line\nbreak","messages":[{"role":"user","content":[{"type":"text","text":"\u00e9"}]}]}`,
		` { "model" : "m" , "messages" : [ { "role" : "user" , "content" : "hi" } ] } `, `null`, `[]`, `{}`,
		ResponsesConversation(2), GeminiRequest,
		`{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"function":{"name":"g"},"Index":1}`,
		`{"type":"function","function":{"name":"f","parameters":{},"Strict":true},"tool_calls":[{"function":null}]}`,
		`{"role":"user","parts":[{"text":"a"},{"inlineData":{"mimeType":"image/png","data":"AA"}},{"thought":true,"thoughtSignature":"s"}]}`,
		`{"functionDeclarations":[{"name":"f","parametersJsonSchema":{},"Parameters":{}}],"functionDeclarations":[]}`,
		`{"type":"namespace","tools":[{"type":"function","name":"f","tools":[]}],"strict":1}`,
		`{"name":"f","input_schema":{},"strict":true,"role":"user","content":[{"type":"text"}]}`,
		`[{"type":"thinking","thinking":"a","signature":"s","thinking":"b"},{"type":"tool_result","content":[{"type":"text","text":"x"}],"is_error":true},{"Thinking":"c"}]`,
		`{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral","ttl":"1h"}}],"cache_control":{"type":"ephemeral"},"prompt_cache_key":"k","name":"f","input_schema":{}}`,
		`[{"type":"function_call","arguments":"{}","arguments":null},{"type":"reasoning","summary":[],"encrypted_content":"e"},{"type":"image_url","image_url":{"url":"u"}},{"annotations":[],"detail":"d"}]`} {
		out = append(out, []byte(s))
	}
	return out
}

// Compact re-marshals a JSON literal written across lines in a test.
func Compact(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic("test JSON: " + err.Error() + "\n" + s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// mustJSON is json.Marshal of v, which must not fail.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", v, err))
	}
	return b
}
