package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

func TestToolIDsAcrossAPIs(t *testing.T) {
	t.Run("POOL-25/kimi-ids-reach-anthropic-member-in-its-alphabet-and-return-unchanged", func(t *testing.T) {
		chat := `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"functions.Bash:0","type":"function","function":{"name":"Bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"functions.Bash:0","content":"ok"}]}`
		r, err := decodeReq(t, apikind.Chat, chat)
		if err != nil {
			t.Fatal(err)
		}
		an, err := EncodeRequest(apikind.Anthropic, r)
		if err != nil {
			t.Fatal(err)
		}
		want := "dpid_ZnVuY3Rpb25zLkJhc2g6MA" // the reversible form of an id outside the alphabet
		if strings.Contains(string(an), "functions.Bash:0") || strings.Count(string(an), `"`+want+`"`) != 2 {
			t.Fatalf("anthropic body %s", an)
		}
		back, err := decodeReq(t, apikind.Anthropic, string(an))
		if err != nil {
			t.Fatal(err)
		}
		ch, err := EncodeRequest(apikind.Chat, back)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(ch), `"functions.Bash:0"`) != 2 || strings.Contains(string(ch), "dpid_") {
			t.Fatalf("chat body %s", ch)
		}
	})
	t.Run("POOL-25/kimi-ids-in-answers-to-anthropic-clients", func(t *testing.T) {
		resp := `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"functions.Read:3","type":"function","function":{"name":"Read","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`
		r, err := DecodeResponse(apikind.Chat, []byte(resp))
		if err != nil {
			t.Fatal(err)
		}
		const readID = "dpid_ZnVuY3Rpb25zLlJlYWQ6Mw" // functions.Read:3 in the alphabet
		out, err := EncodeResponse(apikind.Anthropic, r, "m")
		if err != nil || !strings.Contains(string(out), `"id":"`+readID+`"`) {
			t.Fatalf("%v %s", err, out)
		}
		in := []sseEv{
			{"", `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"functions.Read:3","type":"function","function":{"name":"Read","arguments":""}}]},"finish_reason":null}]}`},
			{"", `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":null}]}`},
			{"", `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`},
			{"", `[DONE]`},
		}
		evs, err := runStream(t, apikind.Chat, apikind.Anthropic, in)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, ev := range evs {
			if ev.name == "content_block_start" && strings.Contains(ev.data, `"id":"`+readID+`"`) {
				found = true
			}
		}
		if !found {
			t.Fatalf("stream %v", evs)
		}
	})
	t.Run("POOL-25/tool-without-input-is-empty-object-in-chat-stream", func(t *testing.T) {
		in := []sseEv{
			{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":1,"output_tokens":0}}}`},
			{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"Now","input":{}}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`},
			{"content_block_stop", `{"type":"content_block_stop","index":0}`},
			{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_2","name":"Read","input":{}}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"p\":1}"}}`},
			{"content_block_stop", `{"type":"content_block_stop","index":1}`},
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}`},
			{"message_stop", `{"type":"message_stop"}`},
		}
		evs, err := runStream(t, apikind.Anthropic, apikind.Chat, in)
		if err != nil {
			t.Fatal(err)
		}
		args := map[int]string{}
		for _, ev := range evs {
			var c struct {
				Choices []struct {
					Delta struct {
						ToolCalls []struct {
							Index    int `json:"index"`
							Function struct {
								Arguments string `json:"arguments"`
							} `json:"function"`
						} `json:"tool_calls"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if json.Unmarshal([]byte(ev.data), &c) != nil || len(c.Choices) == 0 {
				continue
			}
			for _, tc := range c.Choices[0].Delta.ToolCalls {
				args[tc.Index] += tc.Function.Arguments
			}
		}
		if args[0] != "{}" || args[1] != `{"p":1}` {
			t.Fatalf("arguments %v\n%v", args, evs)
		}
	})
}

func TestThinkingInToolLoops(t *testing.T) {
	t.Run("POOL-18/tool-loop-without-signed-thinking-sent-without-thinking", func(t *testing.T) {
		loop := `{"model":"m","reasoning_effort":"high","max_tokens":20000,"messages":[{"role":"user","content":"go"},{"role":"assistant","reasoning_content":"plan","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"Bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`
		r, err := decodeReq(t, apikind.Chat, loop)
		if err != nil {
			t.Fatal(err)
		}
		an, err := EncodeRequest(apikind.Anthropic, r)
		if err != nil || !strings.Contains(string(an), `"thinking":{"type":"disabled"}`) {
			t.Fatalf("%v %s", err, an)
		}
		fresh := `{"model":"m","reasoning_effort":"high","max_tokens":20000,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"done"},{"role":"user","content":"more"}]}`
		r, _ = decodeReq(t, apikind.Chat, fresh)
		an, err = EncodeRequest(apikind.Anthropic, r)
		if err != nil || !strings.Contains(string(an), `"thinking":{"type":"enabled"`) {
			t.Fatalf("a new turn keeps thinking: %v %s", err, an)
		}
	})
}
