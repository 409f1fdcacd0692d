package api

import (
	"fmt"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// reqFeature is one request feature written in each API's own form. Every
// form is decoded and encoded into every API (12 directions plus the 4 round
// trips) and compared with that API's form. errs names the field an encoder
// must refuse when the feature is not expressible there.
type reqFeature struct {
	name  string
	forms map[apikind.Kind]string
	errs  map[apikind.Kind]string
}

const weatherSchema = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

var reqFeatures = []reqFeature{
	{name: "POOL-21/request/system-and-multi-turn-text-unicode", forms: map[apikind.Kind]string{
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
	{name: "POOL-21/request/sampling-and-stop-sequences", forms: map[apikind.Kind]string{
		apikind.Anthropic: `{"model":"m","max_tokens":50,"temperature":0.5,"top_p":0.9,"stop_sequences":["END"],
			"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		apikind.Chat: `{"model":"m","max_tokens":50,"temperature":0.5,"top_p":0.9,"stop":["END"],"messages":[{"role":"user","content":"x"}]}`,
		apikind.Gemini: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],
			"generationConfig":{"temperature":0.5,"topP":0.9,"maxOutputTokens":50,"stopSequences":["END"]}}`,
	}, errs: map[apikind.Kind]string{apikind.Responses: "stop_sequences"}},
	{name: "POOL-21/request/images-base64-and-url", forms: map[apikind.Kind]string{
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
	{name: "POOL-21/request/tools-parallel-calls-and-results", forms: map[apikind.Kind]string{
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
	{name: "POOL-21/request/named-tool-choice", forms: map[apikind.Kind]string{
		apikind.Anthropic: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],
			"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"}}`,
		apikind.Chat: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}],
			"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		apikind.Responses: `{"model":"m","max_output_tokens":10,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}],
			"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"f"}}`,
		apikind.Gemini: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f","parametersJsonSchema":{"type":"object"}}]}],
			"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}},"generationConfig":{"maxOutputTokens":10}}`,
	}},
	{name: "POOL-21/request/reasoning-effort", forms: map[apikind.Kind]string{
		apikind.Anthropic: `{"model":"m","max_tokens":20000,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],
			"thinking":{"type":"enabled","budget_tokens":8192}}`,
		apikind.Chat:      `{"model":"m","max_tokens":20000,"messages":[{"role":"user","content":"x"}],"reasoning_effort":"medium"}`,
		apikind.Responses: `{"model":"m","max_output_tokens":20000,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}],"reasoning":{"effort":"medium","summary":"auto"}}`,
		apikind.Gemini: `{"contents":[{"role":"user","parts":[{"text":"x"}]}],
			"generationConfig":{"maxOutputTokens":20000,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}}`,
	}},
	{name: "POOL-21/request/structured-output-json-schema", forms: map[apikind.Kind]string{
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

func TestRequestMatrix(t *testing.T) {
	for _, f := range reqFeatures {
		for _, from := range apis {
			src, ok := f.forms[from]
			if !ok {
				continue
			}
			for _, to := range apis {
				t.Run(fmt.Sprintf("%s/%s-to-%s", f.name, from, to), func(t *testing.T) {
					r, err := decodeReq(t, from, src)
					if err != nil {
						t.Fatalf("decode %s: %v", from, err)
					}
					got, err := EncodeRequest(to, r)
					if field, want := f.errs[to]; want {
						if fieldOf(err) != field {
							t.Fatalf("encode %s: error %v, want a FieldError naming %q", to, err, field)
						}
						return
					}
					if err != nil {
						t.Fatalf("encode %s: %v", to, err)
					}
					if g, w := normalize(t, got), normalize(t, []byte(f.forms[to])); g != w {
						t.Errorf("got  %s\nwant %s", g, w)
					}
				})
			}
		}
	}
}
