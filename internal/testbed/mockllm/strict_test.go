package mockllm

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// post sends body to path on srv and returns the status and the body.
func post(t *testing.T, srv *httptest.Server, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestStrictChannel(t *testing.T) {
	t.Run("POOL-18/anthropic-accepts-only-its-own-thinking-signatures", func(t *testing.T) {
		a := &Channel{API: Anthropic, Strict: true, Turns: []Turn{{Reasoning: "let me see", ToolCalls: []ToolCall{{Name: "Bash", Args: `{"c":1}`}}}}}
		b := &Channel{API: Anthropic, Strict: true}
		sa, sb := httptest.NewServer(a), httptest.NewServer(b)
		defer sa.Close()
		defer sb.Close()
		st, ans := post(t, sa, "/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
		var doc struct {
			Content []json.RawMessage `json:"content"`
		}
		if st != 200 || json.Unmarshal([]byte(ans), &doc) != nil || len(doc.Content) != 2 {
			t.Fatalf("%d %s", st, ans)
		}
		history := `{"model":"m","max_tokens":10,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[` +
			string(doc.Content[0]) + `,` + string(doc.Content[1]) + `]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_mock_1","content":"ok"}]}]}`
		if st, ans := post(t, sa, "/v1/messages", history); st != 200 {
			t.Fatalf("own signature refused: %d %s", st, ans)
		}
		st, ans = post(t, sb, "/v1/messages", history)
		if st != 400 || !strings.Contains(ans, "messages.1.content.0: Invalid `signature` in `thinking` block") || !strings.Contains(ans, "invalid_request_error") {
			t.Fatalf("foreign signature: %d %s", st, ans)
		}
		altered := strings.Replace(history, `"thinking":"let me see"`, `"thinking":"let me think"`, 1)
		if st, ans := post(t, sa, "/v1/messages", altered); st != 400 || !strings.Contains(ans, "Invalid `signature`") {
			t.Fatalf("altered thinking: %d %s", st, ans)
		}
		empty := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":""},{"type":"text","text":"y"}]},{"role":"user","content":"go"}]}`
		if st, ans := post(t, sa, "/v1/messages", empty); st != 400 || !strings.Contains(ans, "messages.1.content.0: Invalid `signature`") {
			t.Fatalf("empty signature: %d %s", st, ans)
		}
		if n := b.Refused(); n != 1 {
			t.Fatalf("b refused %d calls", n)
		}
	})
	t.Run("POOL-18/anthropic-tool-loop-without-thinking-block-refused-with-thinking-enabled", func(t *testing.T) {
		srv := httptest.NewServer(&Channel{API: Anthropic, Strict: true})
		defer srv.Close()
		loop := `{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}`
		st, ans := post(t, srv, "/v1/messages", `{"model":"m","max_tokens":10,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[`+loop+`]}`)
		if st != 400 || !strings.Contains(ans, "Expected `thinking` or `redacted_thinking`, but found `tool_use`") {
			t.Fatalf("%d %s", st, ans)
		}
		if st, ans := post(t, srv, "/v1/messages", `{"model":"m","max_tokens":10,"messages":[`+loop+`]}`); st != 200 {
			t.Fatalf("without thinking: %d %s", st, ans)
		}
	})
	t.Run("POOL-25/anthropic-refuses-tool-ids-outside-its-alphabet", func(t *testing.T) {
		srv := httptest.NewServer(&Channel{API: Anthropic, Strict: true})
		defer srv.Close()
		body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"functions.Bash:0","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"functions.Bash:0","content":"ok"}]}]}`
		st, ans := post(t, srv, "/v1/messages", body)
		if st != 400 || !strings.Contains(ans, "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'") {
			t.Fatalf("%d %s", st, ans)
		}
		unpaired := strings.ReplaceAll(body, "functions.Bash:0", "t1")
		unpaired = strings.Replace(unpaired, `"tool_use_id":"t1"`, `"tool_use_id":"t2"`, 1)
		if st, ans := post(t, srv, "/v1/messages", unpaired); st != 400 || !strings.Contains(ans, "unexpected `tool_use_id` found in `tool_result` blocks: t2") {
			t.Fatalf("%d %s", st, ans)
		}
	})
	t.Run("POOL-25/chat-channel-mints-kimi-style-tool-ids", func(t *testing.T) {
		ch := &Channel{API: Chat, Strict: true, KimiToolIDs: true, Turns: []Turn{{ToolCalls: []ToolCall{{Name: "Bash"}, {Name: "Read"}}}, {ToolCalls: []ToolCall{{Name: "Bash"}}}}}
		srv := httptest.NewServer(ch)
		defer srv.Close()
		var ids []string
		for range 2 {
			st, ans := post(t, srv, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
			var doc struct {
				Choices []struct {
					Message struct {
						ToolCalls []struct {
							ID string `json:"id"`
						} `json:"tool_calls"`
					} `json:"message"`
				} `json:"choices"`
			}
			if st != 200 || json.Unmarshal([]byte(ans), &doc) != nil || len(doc.Choices) != 1 {
				t.Fatalf("%d %s", st, ans)
			}
			for _, tc := range doc.Choices[0].Message.ToolCalls {
				ids = append(ids, tc.ID)
			}
		}
		if strings.Join(ids, " ") != "functions.Bash:0 functions.Read:1 functions.Bash:2" {
			t.Fatalf("ids %q", ids)
		}
		orphan := `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"Bash","arguments":"{}"}}]},{"role":"tool","tool_call_id":"b","content":"x"}]}`
		if st, ans := post(t, srv, "/v1/chat/completions", orphan); st != 400 || !strings.Contains(ans, "must be a response to a preceeding message with 'tool_calls'") {
			t.Fatalf("%d %s", st, ans)
		}
	})
	t.Run("POOL-18/gemini-accepts-only-its-own-thought-signatures-and-the-placeholder", func(t *testing.T) {
		a := &Channel{API: Gemini, Strict: true, Turns: []Turn{{Reasoning: "hmm", ToolCalls: []ToolCall{{Name: "Bash", Args: `{"c":1}`}}}}}
		b := &Channel{API: Gemini, Strict: true}
		sa, sb := httptest.NewServer(a), httptest.NewServer(b)
		defer sa.Close()
		defer sb.Close()
		path := "/v1beta/models/m:generateContent"
		st, ans := post(t, sa, path, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
		var doc struct {
			Candidates []struct {
				Content json.RawMessage `json:"content"`
			} `json:"candidates"`
		}
		if st != 200 || json.Unmarshal([]byte(ans), &doc) != nil || len(doc.Candidates) != 1 || !strings.Contains(string(doc.Candidates[0].Content), `"thoughtSignature"`) {
			t.Fatalf("%d %s", st, ans)
		}
		history := `{"contents":[{"role":"user","parts":[{"text":"hi"}]},` + string(doc.Candidates[0].Content) +
			`,{"role":"user","parts":[{"functionResponse":{"name":"Bash","response":{"ok":true}}}]}]}`
		if st, ans := post(t, sa, path, history); st != 200 {
			t.Fatalf("own signature refused: %d %s", st, ans)
		}
		st, ans = post(t, sb, path, history)
		if st != 400 || !strings.Contains(ans, "Corrupted thought signature.") || !strings.Contains(ans, "INVALID_ARGUMENT") {
			t.Fatalf("foreign signature: %d %s", st, ans)
		}
		var c map[string]any
		_ = json.Unmarshal(doc.Candidates[0].Content, &c)
		for _, p := range c["parts"].([]any) {
			if pm := p.(map[string]any); pm["thoughtSignature"] != nil {
				pm["thoughtSignature"] = skipThoughtSignature
			}
		}
		placeholder, _ := json.Marshal(c)
		history = `{"contents":[{"role":"user","parts":[{"text":"hi"}]},` + string(placeholder) +
			`,{"role":"user","parts":[{"functionResponse":{"name":"Bash","response":{"ok":true}}}]}]}`
		if st, ans := post(t, sb, path, history); st != 200 {
			t.Fatalf("placeholder refused: %d %s", st, ans)
		}
	})
	t.Run("POOL-18/streamed-signatures-are-the-channels-own", func(t *testing.T) {
		a := &Channel{API: Anthropic, Strict: true, Turns: []Turn{{Reasoning: "abc", Text: "done"}}}
		srv := httptest.NewServer(a)
		defer srv.Close()
		st, ans := post(t, srv, "/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		i := strings.Index(ans, `"signature":"`)
		j := strings.Index(ans, `"type":"signature_delta"`)
		if st != 200 || i < 0 || j < 0 {
			t.Fatalf("%d %s", st, ans)
		}
		sig := ans[strings.LastIndex(ans, `"signature":"`)+len(`"signature":"`):]
		sig = sig[:strings.IndexByte(sig, '"')]
		body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"abc","signature":"` + sig + `"},{"type":"text","text":"done"}]},{"role":"user","content":"more"}]}`
		if st, ans := post(t, srv, "/v1/messages", body); st != 200 {
			t.Fatalf("%d %s", st, ans)
		}
	})
}

// TestOpenAIArgs: a channel that is OpenAI's own API refuses a Chat
// argument OpenAI does not document, as OpenAI does, and takes the same
// call without it.
func TestOpenAIArgs(t *testing.T) {
	t.Run("POOL-25/openai-refuses-top_k-openai-chat-takes-it", func(t *testing.T) {
		openai := &Channel{API: Chat, OpenAIArgs: true}
		compat := &Channel{API: Chat}
		so, sc := httptest.NewServer(openai), httptest.NewServer(compat)
		defer so.Close()
		defer sc.Close()
		withTopK := `{"model":"m","messages":[{"role":"user","content":"hi"}],"top_p":0.9,"top_k":64}`
		st, ans := post(t, so, "/v1/chat/completions", withTopK)
		if st != 400 || !strings.Contains(ans, "Unrecognized request argument supplied: top_k") || !strings.Contains(ans, "invalid_request_error") {
			t.Fatalf("top_k to OpenAI: %d %s", st, ans)
		}
		if st, ans := post(t, so, "/v1/chat/completions", strings.Replace(withTopK, `,"top_k":64`, "", 1)); st != 200 {
			t.Fatalf("without top_k: %d %s", st, ans)
		}
		if st, ans := post(t, sc, "/v1/chat/completions", withTopK); st != 200 {
			t.Fatalf("top_k to an OpenAI-compatible server: %d %s", st, ans)
		}
		if openai.Refused() != 1 || compat.Refused() != 0 {
			t.Fatalf("refused %d and %d calls", openai.Refused(), compat.Refused())
		}
	})
}
