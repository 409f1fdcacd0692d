package pool

import (
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// limitMember is a mock of API speaks (channel api) whose model "small"
// declares 8192 output tokens, refusing more as its API does.
func limitMember(name, api, speaks string) poolMember {
	return poolMember{name: name, api: api, keys: "models: [{id: small, max_tokens: 8192}]",
		mock: &mockllm.Channel{API: speaks, Limits: map[string]int{"small": 8192}}}
}

func TestOutputLimits(t *testing.T) {
	anthropic := func() poolMember { return limitMember("an", config.APIAnthropic, mockllm.Anthropic) }
	chatMember := func() poolMember { return limitMember("ch", config.APIOpenAIChat, mockllm.Chat) }
	auth := map[string]string{"Authorization": "Bearer " + mixToken}
	anAuth := map[string]string{"x-api-key": mixToken, "anthropic-version": "2023-06-01"}
	for _, tc := range []struct {
		name   string
		member poolMember
		call   clientCall
		field  string
		want   float64
	}{
		{"POOL-25/chat-client-without-limit-gets-the-members", anthropic(),
			clientCall{"/v1/chat/completions", `{"model":"small","messages":[{"role":"user","content":"hi"}]}`, auth}, "max_tokens", 8192},
		{"POOL-25/responses-client-without-limit-gets-the-members", anthropic(),
			clientCall{"/v1/responses", `{"model":"small","input":"hi"}`, auth}, "max_tokens", 8192},
		{"POOL-25/chat-client-limit-above-the-members-lowered", anthropic(),
			clientCall{"/v1/chat/completions", `{"model":"small","max_completion_tokens":50000,"messages":[{"role":"user","content":"hi"}]}`, auth}, "max_tokens", 8192},
		{"POOL-25/client-limit-within-the-members-kept", anthropic(),
			clientCall{"/v1/chat/completions", `{"model":"small","max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`, auth}, "max_tokens", 1000},
		{"POOL-25/anthropic-client-limit-lowered-for-a-chat-member", chatMember(),
			clientCall{"/v1/messages", `{"model":"small","max_tokens":32000,"messages":[{"role":"user","content":"hi"}]}`, anAuth}, "max_tokens", 8192},
		{"POOL-25/passthrough-anthropic-limit-lowered", anthropic(),
			clientCall{"/v1/messages", `{"model":"small","max_tokens":64000,"messages":[{"role":"user","content":"hi"}]}`, anAuth}, "max_tokens", 8192},
		{"POOL-25/passthrough-chat-limit-lowered", chatMember(),
			clientCall{"/v1/chat/completions", `{"model":"small","max_completion_tokens":50000,"messages":[{"role":"user","content":"hi"}]}`, auth}, "max_completion_tokens", 8192},
		{"POOL-25/undeclared-model-gets-the-api-default", poolMember{name: "an", api: config.APIAnthropic, mock: &mockllm.Channel{API: mockllm.Anthropic}},
			clientCall{"/v1/chat/completions", `{"model":"small","messages":[{"role":"user","content":"hi"}]}`, auth}, "max_tokens", 32000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := poolOf(t, []poolMember{tc.member}, "")
			resp, body := w.do(tc.call)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if got := w.mocks[tc.member.name].Calls()[0].Body[tc.field]; got != tc.want {
				t.Fatalf("%s sent %v, want %v", tc.field, got, tc.want)
			}
		})
	}
	t.Run("POOL-25/passthrough-thinking-budget-kept-below-the-lowered-limit", func(t *testing.T) {
		w := poolOf(t, []poolMember{anthropic()}, "")
		for i, tc := range []struct {
			limit, budget, want string // want: the thinking sent
		}{
			{"64000", "60000", `{"budget_tokens":8191,"type":"enabled"}`},
			{"64000", "4000", `{"budget_tokens":4000,"type":"enabled"}`},
			{"8000", "7999", `{"budget_tokens":7999,"type":"enabled"}`},
		} {
			body := `{"model":"small","max_tokens":` + tc.limit + `,"thinking":{"type":"enabled","budget_tokens":` + tc.budget +
				`},"messages":[{"role":"user","content":"hi"}]}`
			if resp, b := w.do(clientCall{"/v1/messages", body, anAuth}); resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if got := jsonOf(w.mocks["an"].Calls()[i].Body["thinking"]); got != tc.want {
				t.Fatalf("max_tokens %s, budget %s: thinking %s, want %s", tc.limit, tc.budget, got, tc.want)
			}
		}
	})
	t.Run("POOL-25/lower-limit-in-every-api-body", func(t *testing.T) {
		for _, tc := range []struct {
			api       apikind.Kind
			body, out string
		}{
			{apikind.Anthropic, `{"max_tokens":9000,"thinking":{"type":"enabled","budget_tokens":1500}}`, `{"max_tokens":1200,"thinking":{"type":"enabled","budget_tokens":1199}}`},
			{apikind.Chat, `{"max_tokens":9000, "max_completion_tokens":100}`, `{"max_tokens":1200, "max_completion_tokens":100}`},
			{apikind.Responses, `{"max_output_tokens":9e3}`, `{"max_output_tokens":1200}`},
			{apikind.Gemini, `{"contents":[],"generationConfig":{"temperature":1,"maxOutputTokens":9000}}`, `{"contents":[],"generationConfig":{"temperature":1,"maxOutputTokens":1200}}`},
			{apikind.Gemini, `{"contents":[]}`, `{"contents":[]}`},
		} {
			if got := string(api.LowerLimit(tc.api, []byte(tc.body), 1200)); got != tc.out {
				t.Fatalf("%s: %s, want %s", tc.api, got, tc.out)
			}
		}
		// Under Anthropic's smallest budget (1024) thinking is turned off.
		if got := string(api.LowerLimit(apikind.Anthropic, []byte(`{"max_tokens":9000,"thinking":{"type":"enabled","budget_tokens":1500}}`), 1000)); got != `{"max_tokens":1000,"thinking":{"type":"disabled"}}` {
			t.Fatalf("thinking under its minimum: %s", got)
		}
	})
}
