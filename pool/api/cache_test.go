package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// breakpoints lists where an encoded Messages request carries cache_control,
// in prefix order ("tools[1]", "system[0]", "messages[3].content[1]"), each
// with ":1h" when its TTL is one hour.
func breakpoints(t *testing.T, body []byte) []string {
	t.Helper()
	var w struct {
		Tools    []map[string]any `json:"tools"`
		System   json.RawMessage  `json:"system"`
		Messages []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var out []string
	add := func(where string, cc any) {
		if cc == nil {
			return
		}
		m, _ := cc.(map[string]any)
		if m["type"] != "ephemeral" {
			t.Fatalf("%s: cache_control %v", where, cc)
		}
		if m["ttl"] == "1h" {
			where += ":1h"
		}
		out = append(out, where)
	}
	for i, tl := range w.Tools {
		add(fmt.Sprintf("tools[%d]", i), tl["cache_control"])
	}
	var sys []map[string]any
	if len(w.System) > 0 && w.System[0] == '[' {
		_ = json.Unmarshal(w.System, &sys)
	}
	for i, b := range sys {
		add(fmt.Sprintf("system[%d]", i), b["cache_control"])
	}
	for i, m := range w.Messages {
		for j, b := range m.Content {
			add(fmt.Sprintf("messages[%d].content[%d]", i, j), b["cache_control"])
		}
	}
	return out
}

// toAnthropic decodes body of API from and encodes it for an Anthropic
// member with or without the pool's breakpoints.
func toAnthropic(t *testing.T, from apikind.Kind, body string, auto bool) []byte {
	t.Helper()
	r, err := decodeReq(t, from, body)
	if err != nil {
		t.Fatal(err)
	}
	r.CacheBreakpoints = auto
	out, err := EncodeRequest(apikind.Anthropic, r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// chatToolLoop is a Chat Completions session in its third turn: system,
// two tools, a user question, a tool call and its result, a second tool
// call and its result.
const chatToolLoop = `{"model":"m","stream":true,"messages":[
 {"role":"system","content":"You are a coding agent."},
 {"role":"user","content":"fix the test"},
 {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"Read","arguments":"{\"path\":\"a.go\"}"}}]},
 {"role":"tool","tool_call_id":"c1","content":"package a"},
 {"role":"assistant","content":"Now the edit.","tool_calls":[{"id":"c2","type":"function","function":{"name":"Edit","arguments":"{\"path\":\"a.go\"}"}}]},
 {"role":"tool","tool_call_id":"c2","content":"done"}],
 "tools":[{"type":"function","function":{"name":"Read","parameters":{"type":"object"}}},
          {"type":"function","function":{"name":"Edit","parameters":{"type":"object"}}}]}`

// rsToolLoop is the same session from a Responses client (Codex).
const rsToolLoop = `{"model":"m","stream":true,"instructions":"You are a coding agent.","prompt_cache_key":"sess-1",
 "input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the test"}]},
  {"type":"function_call","call_id":"c1","name":"Read","arguments":"{\"path\":\"a.go\"}"},
  {"type":"function_call_output","call_id":"c1","output":"package a"},
  {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Now the edit."}]},
  {"type":"function_call","call_id":"c2","name":"Edit","arguments":"{\"path\":\"a.go\"}"},
  {"type":"function_call_output","call_id":"c2","output":"done"}],
 "tools":[{"type":"function","name":"Read","parameters":{"type":"object"}},{"type":"function","name":"Edit","parameters":{"type":"object"}}]}`

func TestCacheBreakpoints(t *testing.T) {
	// messages: [0] user, [1] assistant tool_use c1, [2] user tool_result c1,
	// [3] assistant text + tool_use c2, [4] user tool_result c2.
	want := []string{"tools[1]", "system[0]", "messages[2].content[0]", "messages[4].content[0]"}
	t.Run("POOL-24/chat-session-gets-tools-system-and-latest-turns", func(t *testing.T) {
		if got := breakpoints(t, toAnthropic(t, apikind.Chat, chatToolLoop, true)); !reflect.DeepEqual(got, want) {
			t.Fatalf("breakpoints %v, want %v", got, want)
		}
	})
	t.Run("POOL-24/responses-session-gets-tools-system-and-latest-turns", func(t *testing.T) {
		if got := breakpoints(t, toAnthropic(t, apikind.Responses, rsToolLoop, true)); !reflect.DeepEqual(got, want) {
			t.Fatalf("breakpoints %v, want %v", got, want)
		}
	})
	t.Run("POOL-24/system-text-unchanged-by-its-breakpoint", func(t *testing.T) {
		var w struct {
			System []struct {
				Text string `json:"text"`
			} `json:"system"`
		}
		_ = json.Unmarshal(toAnthropic(t, apikind.Chat, chatToolLoop, true), &w)
		if len(w.System) != 1 || w.System[0].Text != "You are a coding agent." {
			t.Fatalf("system %+v", w.System)
		}
	})
	t.Run("POOL-24/off-sends-only-the-clients", func(t *testing.T) {
		if got := breakpoints(t, toAnthropic(t, apikind.Chat, chatToolLoop, false)); len(got) != 0 {
			t.Fatalf("breakpoints %v with the pool's off and none from the client", got)
		}
		var w map[string]any
		_ = json.Unmarshal(toAnthropic(t, apikind.Chat, chatToolLoop, false), &w)
		if _, ok := w["system"].(string); !ok {
			t.Fatalf("system %v: a string as before when nothing marks it", w["system"])
		}
	})
	t.Run("POOL-24/first-turn-marks-its-only-message", func(t *testing.T) {
		body := `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`
		want := []string{"system[0]", "messages[0].content[0]"}
		if got := breakpoints(t, toAnthropic(t, apikind.Chat, body, true)); !reflect.DeepEqual(got, want) {
			t.Fatalf("breakpoints %v, want %v", got, want)
		}
	})
}

func TestClientBreakpointsKept(t *testing.T) {
	t.Run("POOL-24/chat-part-cache-control-kept-and-counted", func(t *testing.T) {
		// The client marks its system prompt and the first user message:
		// two of the four; the pool adds the final message and the previous
		// turn, and then has no slot for the tools.
		body := strings.Replace(strings.Replace(chatToolLoop,
			`{"role":"system","content":"You are a coding agent."}`,
			`{"role":"system","content":[{"type":"text","text":"You are a coding agent.","cache_control":{"type":"ephemeral"}}]}`, 1),
			`{"role":"user","content":"fix the test"}`,
			`{"role":"user","content":[{"type":"text","text":"fix the test","cache_control":{"type":"ephemeral"}}]}`, 1)
		got := breakpoints(t, toAnthropic(t, apikind.Chat, body, true))
		want := []string{"system[0]", "messages[0].content[0]", "messages[2].content[0]", "messages[4].content[0]"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("breakpoints %v, want %v", got, want)
		}
		if got := breakpoints(t, toAnthropic(t, apikind.Chat, body, false)); !reflect.DeepEqual(got, want[:2]) {
			t.Fatalf("with the pool's off: %v, want the client's %v", got, want[:2])
		}
	})
	t.Run("POOL-24/message-level-cache-control-marks-its-last-part", func(t *testing.T) {
		// OpenCode's openai-compatible provider puts cache_control on the message.
		body := `{"model":"m","messages":[{"role":"system","content":"s","cache_control":{"type":"ephemeral"}},
			{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"cache_control":{"type":"ephemeral"}},
			{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}],"cache_control":{"type":"ephemeral"}},
			{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"r","cache_control":{"type":"ephemeral"}}]}]}`
		want := []string{"system[0]", "messages[0].content[1]", "messages[1].content[0]", "messages[2].content[0]"}
		if got := breakpoints(t, toAnthropic(t, apikind.Chat, body, true)); !reflect.DeepEqual(got, want) {
			t.Fatalf("breakpoints %v, want %v", got, want)
		}
	})
	t.Run("POOL-24/more-than-four-client-breakpoints-keep-the-latest", func(t *testing.T) {
		var msgs []string
		for i := range 6 {
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"u%d","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"a%d"}`, i, i))
		}
		body := `{"model":"m","messages":[` + strings.Join(msgs, ",") + `,{"role":"user","content":"last"}]}`
		got := breakpoints(t, toAnthropic(t, apikind.Chat, body, true))
		want := []string{"messages[4].content[0]", "messages[6].content[0]", "messages[8].content[0]", "messages[10].content[0]"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("breakpoints %v, want %v", got, want)
		}
	})
	t.Run("POOL-24/system-split-at-a-client-breakpoint-keeps-its-text", func(t *testing.T) {
		body := `{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"static","cache_control":{"type":"ephemeral"}}]},
			{"role":"system","content":"today is Monday"},{"role":"user","content":"hi"}]}`
		out := toAnthropic(t, apikind.Chat, body, true)
		var w struct {
			System []struct {
				Text         string `json:"text"`
				CacheControl *struct {
					Type string `json:"type"`
				} `json:"cache_control"`
			} `json:"system"`
		}
		_ = json.Unmarshal(out, &w)
		if len(w.System) != 2 || w.System[0].Text+w.System[1].Text != "static\n\ntoday is Monday" ||
			w.System[0].CacheControl == nil || w.System[1].CacheControl == nil {
			t.Fatalf("system %s", out)
		}
	})
	t.Run("POOL-24/one-hour-ttl-never-follows-five-minutes", func(t *testing.T) {
		body := strings.Replace(chatToolLoop, `{"role":"tool","tool_call_id":"c1","content":"package a"}`,
			`{"role":"tool","tool_call_id":"c1","content":"package a","cache_control":{"type":"ephemeral","ttl":"1h"}}`, 1)
		got := breakpoints(t, toAnthropic(t, apikind.Chat, body, true))
		want := []string{"tools[1]:1h", "system[0]:1h", "messages[2].content[0]:1h", "messages[4].content[0]"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("breakpoints %v, want %v", got, want)
		}
	})
	t.Run("POOL-24/thinking-and-empty-text-never-marked", func(t *testing.T) {
		r := &neutral.Request{Model: "m", CacheBreakpoints: true, Messages: []neutral.Message{
			{Role: neutral.RoleUser, Parts: []neutral.Part{{Kind: neutral.KindText, Text: "q"}}},
			{Role: neutral.RoleAssistant, Parts: []neutral.Part{{Kind: neutral.KindText, Text: "a"}, {Kind: neutral.KindReasoning, Text: "t", Signature: "sig"},
				{Kind: neutral.KindText, Text: ""}}},
		}}
		out, err := EncodeRequest(apikind.Anthropic, r)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"messages[1].content[0]"} // the text before the thinking block
		if got := breakpoints(t, out); !reflect.DeepEqual(got, want) {
			t.Fatalf("breakpoints %v, want %v: %s", got, want, out)
		}
	})
	t.Run("POOL-24/anthropic-client-breakpoints-decoded", func(t *testing.T) {
		body := `{"model":"m","max_tokens":10,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral","ttl":"1h"}}],
			"tools":[{"name":"f","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],
			"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":[{"type":"text","text":"r","cache_control":{"type":"ephemeral"}}]}]}]}`
		r, err := DecodeRequest(apikind.Anthropic, []byte(body), "", false)
		if err != nil {
			t.Fatal(err)
		}
		if r.SystemMark(0) == nil || r.SystemMark(0).TTL != "1h" || r.Tools[0].Cache == nil || r.Messages[0].Parts[0].Cache == nil {
			t.Fatalf("marks lost: system %v tool %v result %v", r.SystemCache, r.Tools[0].Cache, r.Messages[0].Parts[0].Cache)
		}
	})
}

func TestPromptCacheKey(t *testing.T) {
	t.Run("POOL-24/prompt-cache-key-survives-responses-to-chat", func(t *testing.T) {
		r, err := decodeReq(t, apikind.Responses, rsToolLoop)
		if err != nil {
			t.Fatal(err)
		}
		for _, to := range []apikind.Kind{apikind.Chat, apikind.Responses} {
			out, err := EncodeRequest(to, r)
			if err != nil {
				t.Fatal(err)
			}
			var w struct {
				Key string `json:"prompt_cache_key"`
			}
			if _ = json.Unmarshal(out, &w); w.Key != "sess-1" {
				t.Fatalf("%s: prompt_cache_key %q in %s", to, w.Key, out)
			}
		}
	})
	t.Run("POOL-24/prompt-cache-key-survives-chat-to-responses", func(t *testing.T) {
		r, err := decodeReq(t, apikind.Chat, `{"model":"m","prompt_cache_key":"k2","messages":[{"role":"user","content":"hi"}]}`)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := EncodeRequest(apikind.Responses, r)
		if !strings.Contains(string(out), `"prompt_cache_key":"k2"`) {
			t.Fatalf("%s", out)
		}
	})
	t.Run("POOL-24/no-place-for-a-prompt-cache-key-in-anthropic-or-gemini", func(t *testing.T) {
		r, _ := decodeReq(t, apikind.Responses, rsToolLoop)
		for _, to := range []apikind.Kind{apikind.Anthropic, apikind.Gemini} {
			out, err := EncodeRequest(to, r)
			if err != nil || strings.Contains(string(out), "sess-1") {
				t.Fatalf("%s: %v %s", to, err, out)
			}
		}
	})
}
