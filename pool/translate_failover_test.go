package pool

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

func TestFailoverAcrossFlavours(t *testing.T) {
	t.Run("POOL-7/silent-failover-from-chat-member-to-gemini-member", func(t *testing.T) {
		w := newMixWorld(t, []mixMember{
			{name: "c", api: "openai-chat", speaks: mockllm.Chat, turns: []mockllm.Turn{{Status: 529}}},
			{name: "g", api: "gemini", speaks: mockllm.Gemini, turns: []mockllm.Turn{{Text: "from gemini"}}},
		}, "    strategy: failover\n")
		resp, body := w.do(clientRequest(apikind.Anthropic, true, "hi"))
		if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "g" || resp.Header.Get("X-Pool-Attempts") != "2" {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
		}
		if got := textOf(answerOf(t, apikind.Anthropic, true, body)); got != "from gemini" {
			t.Fatalf("text %q", got)
		}
		if n := strings.Count(string(body), "event: message_start"); n != 1 {
			t.Fatalf("%d message_start events: the client must see one coherent stream\n%s", n, body)
		}
	})
	t.Run("POOL-7/failure-after-output-is-the-clients-error-event", func(t *testing.T) {
		w := newMixWorld(t, []mixMember{
			{name: "a", api: "anthropic", speaks: mockllm.Anthropic, turns: []mockllm.Turn{{Text: "partial answer", FailAfterOutput: true}}},
			{name: "b", api: "gemini", speaks: mockllm.Gemini},
		}, "    strategy: failover\n")
		resp, body := w.do(clientRequest(apikind.Responses, true, "hi"))
		if resp.StatusCode != 200 || !strings.Contains(string(body), "event: response.failed") || strings.Contains(string(body), "response.completed") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		if n := len(w.mocks["b"].Calls()); n != 0 {
			t.Fatalf("second member called %d times after the commit point", n)
		}
	})
	t.Run("POOL-7/dropped-stream-after-output", func(t *testing.T) {
		w := newMixWorld(t, []mixMember{{name: "a", api: "openai-chat", speaks: mockllm.Chat, turns: []mockllm.Turn{{Text: "partial answer", DropAfterOutput: true}}}}, "")
		resp, body := w.do(clientRequest(apikind.Anthropic, true, "hi"))
		if resp.StatusCode != 200 || !strings.Contains(string(body), "event: error") || strings.Contains(string(body), "message_stop") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("POOL-11/all-failed-error-in-client-shape", func(t *testing.T) {
		w := newMixWorld(t, []mixMember{
			{name: "a", api: "anthropic", speaks: mockllm.Anthropic, turns: []mockllm.Turn{{Status: 529}}},
			{name: "c", api: "openai-chat", speaks: mockllm.Chat, turns: []mockllm.Turn{{Status: 500}}},
		}, "")
		resp, body := w.do(clientRequest(apikind.Gemini, false, "hi"))
		var doc struct {
			Error struct {
				Code   int    `json:"code"`
				Status string `json:"status"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &doc) != nil || doc.Error.Status == "" || resp.StatusCode < 500 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
}

func TestToolRoundTripThroughChatMember(t *testing.T) {
	t.Run("POOL-21/anthropic-tool-use-and-result-via-chat-member", func(t *testing.T) {
		w := newMixWorld(t, []mixMember{{name: "c", api: "openai-chat", speaks: mockllm.Chat, turns: []mockllm.Turn{
			{ToolCalls: []mockllm.ToolCall{{ID: "call_1", Name: "Bash", Args: `{"command":"echo \"hi\" ü"}`}, {ID: "call_2", Name: "Read", Args: `{"path":"a.go"}`}}},
			{Text: "done"},
		}}}, "")
		first := clientRequest(apikind.Anthropic, true, "run it")
		first.body = `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"run it"}],
			"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"name":"Read","input_schema":{"type":"object"}}]}`
		resp, body := w.do(first)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		ans := answerOf(t, apikind.Anthropic, true, body)
		if ans.Stop != neutral.StopToolUse || len(ans.Parts) != 2 || ans.Parts[0].CallID != "call_1" || ans.Parts[0].Args != `{"command":"echo \"hi\" ü"}` {
			t.Fatalf("answer %+v\n%s", ans, body)
		}
		second := first
		second.body = `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"run it"},
			{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"Bash","input":{"command":"echo \"hi\" ü"}},{"type":"tool_use","id":"call_2","name":"Read","input":{"path":"a.go"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"hi ü"},{"type":"tool_result","tool_use_id":"call_2","is_error":true,"content":"no such file"}]}],
			"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"name":"Read","input_schema":{"type":"object"}}]}`
		resp, body = w.do(second)
		if resp.StatusCode != 200 || textOf(answerOf(t, apikind.Anthropic, true, body)) != "done" {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		calls := w.mocks["c"].Calls()
		msgs, _ := calls[1].Body["messages"].([]any)
		var tools []map[string]any
		for _, m := range msgs {
			if mm := m.(map[string]any); mm["role"] == "tool" {
				tools = append(tools, mm)
			}
		}
		if len(tools) != 2 || tools[0]["tool_call_id"] != "call_1" || tools[0]["content"] != "hi ü" || tools[1]["content"] != "Error: no such file" {
			t.Fatalf("tool messages at the member: %+v", msgs)
		}
	})
}

func TestTranslationErrors(t *testing.T) {
	t.Run("POOL-21/untranslatable-field-is-400-naming-it", func(t *testing.T) {
		w := newMixWorld(t, []mixMember{{name: "a", api: "anthropic", speaks: mockllm.Anthropic}}, "")
		c := clientRequest(apikind.Chat, false, "x")
		c.body = `{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`
		resp, body := w.do(c)
		if resp.StatusCode != 400 || !strings.Contains(string(body), "response_format.type") || !strings.Contains(string(body), `"error"`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		if n := len(w.mocks["a"].Calls()); n != 0 {
			t.Fatalf("member called %d times", n)
		}
	})
	t.Run("POOL-18/previous-response-id-only-to-responses-members", func(t *testing.T) {
		w := newMixWorld(t, []mixMember{
			{name: "a", api: "anthropic", speaks: mockllm.Anthropic},
			{name: "o", api: "openai", speaks: mockllm.Responses, turns: []mockllm.Turn{{Text: "stateful"}}},
		}, "    strategy: failover\n")
		c := clientRequest(apikind.Responses, false, "x")
		c.body = `{"model":"m","input":"x","previous_response_id":"resp_1"}`
		resp, body := w.do(c)
		if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "o" || len(w.mocks["a"].Calls()) != 0 {
			t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
		}
	})
	t.Run("POOL-10/member-400-reaches-client-in-its-shape", func(t *testing.T) {
		w := newMixWorld(t, []mixMember{{name: "g", api: "gemini", speaks: mockllm.Gemini, turns: []mockllm.Turn{{Status: 400}}}}, "")
		resp, body := w.do(clientRequest(apikind.Anthropic, false, "x"))
		if resp.StatusCode != 400 || !strings.Contains(string(body), `"type":"invalid_request_error"`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
}

func TestGeminiClientSide(t *testing.T) {
	w := newMixWorld(t, []mixMember{{name: "c", api: "openai-chat", speaks: mockllm.Chat}}, "")
	t.Run("POOL-20/gemini-key-query-token-accepted-and-not-forwarded", func(t *testing.T) {
		c := clientRequest(apikind.Gemini, true, "x")
		c.path = "/v1beta/models/m:streamGenerateContent?alt=sse&key=" + mixToken
		c.hdr = nil
		resp, body := w.do(c)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		for _, call := range w.mocks["c"].Calls() {
			if strings.Contains(call.Query, mixToken) || strings.Contains(call.Header.Get("Authorization"), mixToken) {
				t.Fatalf("token forwarded: %+v", call)
			}
		}
	})
	t.Run("POOL-21/gemini-stream-without-alt-sse-is-400-naming-it", func(t *testing.T) {
		before := len(w.mocks["c"].Calls())
		c := clientRequest(apikind.Gemini, true, "x")
		c.path = "/v1beta/models/m:streamGenerateContent"
		resp, body := w.do(c)
		if resp.StatusCode != 400 || !strings.Contains(string(body), "alt=sse") || !strings.Contains(string(body), `"status":"INVALID_ARGUMENT"`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		if n := len(w.mocks["c"].Calls()); n != before {
			t.Fatalf("the member was called %d times", n-before)
		}
	})
	t.Run("POOL-20/gemini-without-token-is-401-in-gemini-shape", func(t *testing.T) {
		c := clientRequest(apikind.Gemini, false, "x")
		c.hdr = nil
		resp, body := w.do(c)
		if resp.StatusCode != 401 || !strings.Contains(string(body), `"status":"UNAUTHENTICATED"`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("POOL-1/gemini-count-tokens-passthrough-to-gemini-member", func(t *testing.T) {
		g := newMixWorld(t, []mixMember{{name: "g", api: "gemini", speaks: mockllm.Gemini}}, "    models: [{id: m, targets: {g: gemini-target}}]\n")
		c := clientRequest(apikind.Gemini, false, "x")
		c.path = "/v1beta/models/m:countTokens"
		resp, body := g.do(c)
		calls := g.mocks["g"].Calls()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"totalTokens"`) || len(calls) != 1 || calls[0].Path != "/v1beta/models/gemini-target:countTokens" {
			t.Fatalf("%d %s %+v", resp.StatusCode, body, calls)
		}
		resp, body = g.do(clientRequest(apikind.Gemini, true, "x"))
		calls = g.mocks["g"].Calls()
		if resp.StatusCode != 200 || len(calls) != 2 || calls[1].Path != "/v1beta/models/gemini-target:streamGenerateContent" || calls[1].Query != "alt=sse" {
			t.Fatalf("POOL-2: %d %s %+v", resp.StatusCode, body, calls[len(calls)-1])
		}
	})
	t.Run("POOL-1/count-tokens-estimated-for-other-apis", func(t *testing.T) {
		c := clientRequest(apikind.Anthropic, false, "x")
		c.path = "/v1/messages/count_tokens"
		resp, body := w.do(c)
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"input_tokens":`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
}
