package pool

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// poolMember is one mock channel of a test pool: its name, channel api,
// extra channel keys (YAML flow items) and the mock serving it.
type poolMember struct {
	name, api, keys string
	mock            *mockllm.Channel
}

// poolOf starts the mocks and a pool "p" of them.
func poolOf(t *testing.T, members []poolMember, poolExtra string) *mixWorld {
	t.Helper()
	w := &mixWorld{t: t, mocks: map[string]*mockllm.Channel{}}
	var y strings.Builder
	y.WriteString("channels:\n")
	var names []string
	for _, m := range members {
		srv := httptest.NewServer(m.mock)
		t.Cleanup(srv.Close)
		w.mocks[m.name] = m.mock
		names = append(names, m.name)
		keys := ""
		if m.keys != "" {
			keys = ", " + m.keys
		}
		fmt.Fprintf(&y, "  %s: {api: %s, base_url: %q, api_key: sk-%s-secret%s}\n", m.name, m.api, srv.URL, m.name, keys)
	}
	fmt.Fprintf(&y, "pools:\n  p:\n    members: [%s]\n%s", strings.Join(names, ", "), poolExtra)
	cfg, err := config.ParseConfig([]byte(y.String()), func(string) string { return "" })
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y.String())
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	w.pool = New(cfg, Options{Transport: tr, Token: mixToken})
	w.srv = httptest.NewServer(w.pool)
	t.Cleanup(w.srv.Close)
	return w
}

// marksOf lists where a Messages request body carries cache_control, in
// prefix order ("tools[1]", "system[0]", "messages[2].content[0]").
func marksOf(body map[string]any) []string {
	var out []string
	blocks := func(where string, v any) {
		bs, _ := v.([]any)
		for i, b := range bs {
			if m, _ := b.(map[string]any); m["cache_control"] != nil {
				out = append(out, fmt.Sprintf("%s[%d]", where, i))
			}
		}
	}
	blocks("tools", body["tools"])
	blocks("system", body["system"])
	msgs, _ := body["messages"].([]any)
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		blocks(fmt.Sprintf("messages[%d].content", i), mm["content"])
	}
	return out
}

// sessionSystem is an agent-sized system prompt (about 2000 tokens).
var sessionSystem = strings.Repeat("You are a coding agent working in a Go repository. ", 160)

// chatTurn is turn n (1…) of a Chat Completions tool-loop session: the
// system prompt, the question, and n-1 tool calls with their results.
func chatTurn(n int) clientCall {
	msgs := []string{`{"role":"system","content":` + mustJSONString(sessionSystem) + `}`, `{"role":"user","content":"fix the failing test"}`}
	for i := 1; i < n; i++ {
		msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"Read","arguments":"{\"path\":\"f%d.go\"}"}}]}`, i, i),
			fmt.Sprintf(`{"role":"tool","tool_call_id":"call_%d","content":%s}`, i, mustJSONString(strings.Repeat(fmt.Sprintf("line %d of the file\n", i), 40))))
	}
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[` + strings.Join(msgs, ",") +
		`],"tools":[{"type":"function","function":{"name":"Read","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]}`
	return clientCall{"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer " + mixToken}}
}

// responsesTurn is the same session from a Responses client (Codex).
func responsesTurn(n int) clientCall {
	items := []string{`{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the failing test"}]}`}
	for i := 1; i < n; i++ {
		items = append(items, fmt.Sprintf(`{"type":"function_call","call_id":"call_%d","name":"Read","arguments":"{\"path\":\"f%d.go\"}"}`, i, i),
			fmt.Sprintf(`{"type":"function_call_output","call_id":"call_%d","output":%s}`, i, mustJSONString(strings.Repeat(fmt.Sprintf("line %d of the file\n", i), 40))))
	}
	body := `{"model":"m","stream":false,"instructions":` + mustJSONString(sessionSystem) + `,"prompt_cache_key":"codex-session-1","input":[` +
		strings.Join(items, ",") + `],"tools":[{"type":"function","name":"Read","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}]}`
	return clientCall{"/v1/responses", body, map[string]string{"Authorization": "Bearer " + mixToken}}
}

// anthropicMember is an Anthropic mock with a prompt cache that answers
// every call with a tool call.
func anthropicMember(name, keys string) poolMember {
	return poolMember{name: name, api: config.APIAnthropic, keys: keys, mock: &mockllm.Channel{API: mockllm.Anthropic,
		Cache: &mockllm.PromptCache{MinTokens: 1024}, Turns: []mockllm.Turn{{ToolCalls: []mockllm.ToolCall{{Name: "Read", Args: `{"path":"x.go"}`}}, OutputTokens: 5}}}}
}

func TestSessionCacheAcrossAPIs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		api    apikind.Kind
		stream bool
		turn   func(int) clientCall
	}{
		{"POOL-24/chat-session-on-anthropic-member-reads-the-cache", apikind.Chat, true, chatTurn},
		{"POOL-24/responses-session-on-anthropic-member-reads-the-cache", apikind.Responses, false, responsesTurn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := poolOf(t, []poolMember{anthropicMember("an", "")}, "")
			prevPrompt := int64(0)
			for n := 1; n <= 4; n++ {
				resp, body := w.do(tc.turn(n))
				if resp.StatusCode != 200 {
					t.Fatalf("turn %d: %d %s", n, resp.StatusCode, body)
				}
				sent := w.mocks["an"].Calls()[n-1].Body
				// Tools, system, the previous turn's end and the final
				// message (the first turn has no previous turn).
				want := []string{"tools[0]", "system[0]", fmt.Sprintf("messages[%d].content[0]", 2*n-4), fmt.Sprintf("messages[%d].content[0]", 2*n-2)}
				if n == 1 {
					want = []string{"tools[0]", "system[0]", "messages[0].content[0]"}
				}
				if got := marksOf(sent); !reflect.DeepEqual(got, want) {
					t.Fatalf("turn %d: breakpoints %v, want %v", n, got, want)
				}
				// The client's usage counts what the member read from its
				// cache (OpenAI's cached_tokens; a write is not told apart).
				u := answerOf(t, tc.api, tc.stream, body).Usage
				prompt := u.Input + u.CacheRead + u.CacheWrite
				switch {
				case n == 1 && u.CacheRead != 0:
					t.Fatalf("turn 1 read a cache nothing wrote: %+v", u)
				case n > 1 && u.CacheRead != prevPrompt:
					t.Fatalf("turn %d reads the whole previous turn (%d tokens): %+v", n, prevPrompt, u)
				}
				prevPrompt = prompt
			}
		})
	}
	t.Run("POOL-24/chat-part-cache-control-kept-and-counted-within-four", func(t *testing.T) {
		w := poolOf(t, []poolMember{anthropicMember("an", "")}, "")
		c := chatTurn(3)
		c.body = strings.Replace(c.body, `{"role":"user","content":"fix the failing test"}`,
			`{"role":"user","content":[{"type":"text","text":"fix the failing test","cache_control":{"type":"ephemeral"}}]}`, 1)
		c.body = strings.Replace(c.body, `{"role":"system","content":`+mustJSONString(sessionSystem)+`}`,
			`{"role":"system","content":[{"type":"text","text":`+mustJSONString(sessionSystem)+`,"cache_control":{"type":"ephemeral"}}]}`, 1)
		if resp, body := w.do(c); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		got := marksOf(w.mocks["an"].Calls()[0].Body)
		want := []string{"system[0]", "messages[0].content[0]", "messages[2].content[0]", "messages[4].content[0]"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("breakpoints %v, want the client's two and the pool's latest turns %v", got, want)
		}
	})
	t.Run("POOL-24/cache-breakpoints-off-sends-only-the-clients", func(t *testing.T) {
		w := poolOf(t, []poolMember{anthropicMember("an", "cache_breakpoints: off")}, "")
		for n := 1; n <= 2; n++ {
			resp, body := w.do(chatTurn(n))
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if got := marksOf(w.mocks["an"].Calls()[n-1].Body); len(got) != 0 {
				t.Fatalf("turn %d: breakpoints %v on a member with cache_breakpoints: off", n, got)
			}
			if u := answerOf(t, apikind.Chat, true, body).Usage; u.CacheRead != 0 {
				t.Fatalf("turn %d read the cache without breakpoints: %+v", n, u)
			}
		}
	})
	t.Run("POOL-24/prompt-cache-key-reaches-a-chat-member", func(t *testing.T) {
		w := poolOf(t, []poolMember{{name: "kimi", api: config.APIOpenAIChat, mock: &mockllm.Channel{API: mockllm.Chat}}}, "")
		if resp, body := w.do(responsesTurn(2)); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		sent := w.mocks["kimi"].Calls()[0].Body
		if sent["prompt_cache_key"] != "codex-session-1" || strings.Contains(fmt.Sprint(sent), "cache_control") {
			t.Fatalf("Chat member sent %v", sent)
		}
	})
}

// jsonOf is v as JSON text, for failure messages.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
