package chat

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// Chat Completions answer wire types (non-streamed and chunks).
type chatResponse struct {
	ID      string           `json:"id"`
	Object  string           `json:"object"`
	Created int64            `json:"created"`
	Model   string           `json:"model"`
	Choices []chatChoice     `json:"choices"`
	Usage   *chatUsage       `json:"usage,omitempty"`
	Error   *neutral.AnError `json:"error,omitempty"`
}

type chatChoice struct {
	Index        int          `json:"index"`
	Message      *chatMessage `json:"message,omitempty"`
	Delta        *chatMessage `json:"delta,omitempty"`
	FinishReason *string      `json:"finish_reason"`
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details,omitempty"`
	PromptCacheHitTokens int64 `json:"prompt_cache_hit_tokens,omitempty"` // DeepSeek
}

func (u *chatUsage) neutral() neutral.Usage {
	if u == nil {
		return neutral.Usage{}
	}
	n := neutral.Usage{Output: u.CompletionTokens}
	if u.PromptTokensDetails != nil {
		n.CacheRead = u.PromptTokensDetails.CachedTokens
	}
	if n.CacheRead == 0 {
		n.CacheRead = u.PromptCacheHitTokens
	}
	n.Input = u.PromptTokens - n.CacheRead
	if u.CompletionTokensDetails != nil {
		n.Reasoning = u.CompletionTokensDetails.ReasoningTokens
	}
	return n
}

func chatUsageOf(u neutral.Usage) *chatUsage {
	prompt := u.Input + u.CacheRead + u.CacheWrite
	c := &chatUsage{PromptTokens: prompt, CompletionTokens: u.Output, TotalTokens: prompt + u.Output}
	c.PromptTokensDetails = &struct {
		CachedTokens int64 `json:"cached_tokens"`
	}{u.CacheRead}
	if u.Reasoning > 0 {
		c.CompletionTokensDetails = &struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		}{u.Reasoning}
	}
	return c
}

func chatStop(s string) neutral.StopReason {
	switch s {
	case "length":
		return neutral.StopMaxTokens
	case "tool_calls", "function_call":
		return neutral.StopToolUse
	case "content_filter":
		return neutral.StopFilter
	}
	return neutral.StopEnd
}

func chatStopOf(s neutral.StopReason) string {
	switch s {
	case neutral.StopMaxTokens:
		return "length"
	case neutral.StopToolUse:
		return "tool_calls"
	case neutral.StopFilter:
		return "content_filter"
	}
	return "stop"
}

// decodeChatResponse reads a non-streamed Chat Completions answer (the
// first choice).
func decodeChatResponse(body []byte) (*neutral.Response, error) {
	var w chatResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, neutral.WireErr("body", err)
	}
	if len(w.Choices) == 0 || w.Choices[0].Message == nil {
		return nil, neutral.FieldErr("choices", "no choice in the answer")
	}
	c := w.Choices[0]
	r := &neutral.Response{ID: w.ID, Model: w.Model, Usage: w.Usage.neutral()}
	if c.FinishReason != nil {
		r.Stop = chatStop(*c.FinishReason)
	}
	m := c.Message
	if rc := firstNonNil(m.ReasoningContent, m.Reasoning); rc != "" {
		r.Parts = append(r.Parts, neutral.Part{Kind: neutral.KindReasoning, Text: rc})
	}
	parts, err := decodeChatContent("choices[0].message.content", m.Content)
	if err != nil {
		return nil, err
	}
	r.Parts = append(r.Parts, parts...)
	if m.Refusal != nil && *m.Refusal != "" {
		r.Parts = append(r.Parts, neutral.Part{Kind: neutral.KindText, Text: *m.Refusal})
		r.Stop = neutral.StopFilter
	}
	for _, tc := range m.ToolCalls {
		r.Parts = append(r.Parts, neutral.Part{Kind: neutral.KindToolCall, CallID: tc.ID, Name: tc.Function.Name, Args: neutral.ArgsOrEmpty(tc.Function.Arguments)})
	}
	return r, nil
}

// encodeChatResponse writes r as a Chat Completions answer naming model.
func encodeChatResponse(r *neutral.Response, model string) ([]byte, error) {
	msg := chatMessage{Role: "assistant"}
	text, reasoning := "", ""
	hasText := false
	for i, p := range r.Parts {
		switch p.Kind {
		case neutral.KindText:
			text += p.Text
			hasText = true
		case neutral.KindReasoning:
			reasoning += p.Text
		case neutral.KindToolCall:
			var tc chatToolCall
			id := p.CallID
			if id == "" {
				id = neutral.NewID("call_")
			}
			tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments = id, "function", p.Name, neutral.ArgsOrEmpty(p.Args)
			msg.ToolCalls = append(msg.ToolCalls, tc)
		default:
			return nil, neutral.FieldErr(fmt.Sprintf("content[%d]", i), "%s output is not expressible in Chat Completions", p.Kind)
		}
	}
	msg.Content = json.RawMessage("null")
	if hasText {
		msg.Content = wirefmt.MustJSON(text)
	}
	if reasoning != "" {
		msg.ReasoningContent = &reasoning
	}
	id := r.ID
	if id == "" {
		id = neutral.NewID("chatcmpl-")
	}
	fr := chatStopOf(r.Stop)
	w := chatResponse{ID: id, Object: "chat.completion", Created: Now().Unix(), Model: model,
		Choices: []chatChoice{{Message: &msg, FinishReason: &fr}}, Usage: chatUsageOf(r.Usage)}
	return wirefmt.MustJSON(w), nil
}

// Now is the clock for "created" fields; tests fix it.
var Now = time.Now
