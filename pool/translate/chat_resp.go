package translate

import (
	"encoding/json"
	"fmt"
	"time"
)

// Chat Completions answer wire types (non-streamed and chunks).
type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage,omitempty"`
	Error   *anError     `json:"error,omitempty"`
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

func (u *chatUsage) neutral() Usage {
	if u == nil {
		return Usage{}
	}
	n := Usage{Output: u.CompletionTokens}
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

func chatUsageOf(u Usage) *chatUsage {
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

func chatStop(s string) StopReason {
	switch s {
	case "length":
		return StopMaxTokens
	case "tool_calls", "function_call":
		return StopToolUse
	case "content_filter":
		return StopFilter
	}
	return StopEnd
}

func chatStopOf(s StopReason) string {
	switch s {
	case StopMaxTokens:
		return "length"
	case StopToolUse:
		return "tool_calls"
	case StopFilter:
		return "content_filter"
	}
	return "stop"
}

// DecodeChatResponse reads a non-streamed Chat Completions answer (the
// first choice).
func DecodeChatResponse(body []byte) (*Response, error) {
	var w chatResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, wireErr("body", err)
	}
	if len(w.Choices) == 0 || w.Choices[0].Message == nil {
		return nil, fieldErr("choices", "no choice in the answer")
	}
	c := w.Choices[0]
	r := &Response{ID: w.ID, Model: w.Model, Usage: w.Usage.neutral()}
	if c.FinishReason != nil {
		r.Stop = chatStop(*c.FinishReason)
	}
	m := c.Message
	if rc := firstNonNil(m.ReasoningContent, m.Reasoning); rc != "" {
		r.Parts = append(r.Parts, Part{Kind: KindReasoning, Text: rc})
	}
	parts, err := decodeChatContent("choices[0].message.content", m.Content)
	if err != nil {
		return nil, err
	}
	r.Parts = append(r.Parts, parts...)
	if m.Refusal != nil && *m.Refusal != "" {
		r.Parts = append(r.Parts, Part{Kind: KindText, Text: *m.Refusal})
		r.Stop = StopFilter
	}
	for _, tc := range m.ToolCalls {
		r.Parts = append(r.Parts, Part{Kind: KindToolCall, CallID: tc.ID, Name: tc.Function.Name, Args: argsOrEmpty(tc.Function.Arguments)})
	}
	return r, nil
}

// EncodeChatResponse writes r as a Chat Completions answer naming model.
func EncodeChatResponse(r *Response, model string) ([]byte, error) {
	msg := chatMessage{Role: "assistant"}
	text, reasoning := "", ""
	hasText := false
	for i, p := range r.Parts {
		switch p.Kind {
		case KindText:
			text += p.Text
			hasText = true
		case KindReasoning:
			reasoning += p.Text
		case KindToolCall:
			var tc chatToolCall
			id := p.CallID
			if id == "" {
				id = newID("call_")
			}
			tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments = id, "function", p.Name, argsOrEmpty(p.Args)
			msg.ToolCalls = append(msg.ToolCalls, tc)
		default:
			return nil, fieldErr(fmt.Sprintf("content[%d]", i), "%s output is not expressible in Chat Completions", p.Kind)
		}
	}
	msg.Content = json.RawMessage("null")
	if hasText {
		msg.Content = mustJSON(text)
	}
	if reasoning != "" {
		msg.ReasoningContent = &reasoning
	}
	id := r.ID
	if id == "" {
		id = newID("chatcmpl-")
	}
	fr := chatStopOf(r.Stop)
	w := chatResponse{ID: id, Object: "chat.completion", Created: now().Unix(), Model: model,
		Choices: []chatChoice{{Message: &msg, FinishReason: &fr}}, Usage: chatUsageOf(r.Usage)}
	return mustJSON(w), nil
}

// now is the clock for "created" fields; tests fix it.
var now = time.Now
