package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// Anthropic Messages answer wire types.
type anResponse struct {
	ID           string    `json:"id"`
	Type         string    `json:"type"`
	Role         string    `json:"role"`
	Model        string    `json:"model"`
	Content      []anBlock `json:"content"`
	StopReason   *string   `json:"stop_reason"`
	StopSequence *string   `json:"stop_sequence"`
	Usage        anUsage   `json:"usage"`
}

type anUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens,omitempty"`
}

func (u anUsage) neutral() neutral.Usage {
	return neutral.Usage{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
}

func anUsageOf(u neutral.Usage) anUsage {
	return anUsage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadInputTokens: u.CacheRead, CacheCreationInputTokens: u.CacheWrite}
}

// anStop maps Anthropic stop reasons; "refusal" is StopFilter, "pause_turn"
// (a server tool paused) is an end.
func anStop(s string) neutral.StopReason {
	switch s {
	case "max_tokens", "model_context_window_exceeded":
		return neutral.StopMaxTokens
	case "stop_sequence":
		return neutral.StopSequence
	case "tool_use":
		return neutral.StopToolUse
	case "refusal":
		return neutral.StopFilter
	}
	return neutral.StopEnd
}

func anStopOf(s neutral.StopReason) string {
	if s == neutral.StopFilter {
		return "refusal"
	}
	if s == "" {
		return "end_turn"
	}
	return string(s)
}

// decodeAnthropicResponse reads a non-streamed Messages answer.
func decodeAnthropicResponse(body []byte) (*neutral.Response, error) {
	var w anResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, neutral.WireErr("body", err)
	}
	r := &neutral.Response{ID: w.ID, Model: w.Model, Usage: w.Usage.neutral()}
	if w.StopReason != nil {
		r.Stop = anStop(*w.StopReason)
	}
	if w.StopSequence != nil {
		r.StopSequence = *w.StopSequence
	}
	for i, b := range w.Content {
		p, err := decodeAnBlock(fmt.Sprintf("content[%d]", i), b)
		if err != nil {
			return nil, err
		}
		r.Parts = append(r.Parts, p)
	}
	return r, nil
}

// encodeAnthropicResponse writes r as a Messages answer naming model.
func encodeAnthropicResponse(r *neutral.Response, model string) ([]byte, error) {
	w := anResponse{ID: r.ID, Type: "message", Role: "assistant", Model: model, Content: []anBlock{}, Usage: anUsageOf(r.Usage)}
	if w.ID == "" {
		w.ID = neutral.NewID("msg_")
	}
	stop := anStopOf(r.Stop)
	w.StopReason = &stop
	if r.StopSequence != "" {
		w.StopSequence = &r.StopSequence
	}
	for i, p := range r.Parts {
		if p.Kind == neutral.KindToolCall && p.CallID == "" {
			p.CallID = neutral.NewID("toolu_")
		}
		if p.Kind == neutral.KindReasoning && p.Redacted == "" {
			// An answer's thinking is kept even unsigned: the client shows it.
			text, sig := p.Text, p.Signature
			w.Content = append(w.Content, anBlock{Type: "thinking", Thinking: &text, Signature: &sig})
			continue
		}
		b, ok, err := encodeAnPart(fmt.Sprintf("content[%d]", i), p, nil)
		if err != nil {
			return nil, err
		}
		if ok {
			w.Content = append(w.Content, b)
		}
	}
	return wirefmt.MustJSON(w), nil
}

// Anthropic stream wire type: the union of the event payloads.
type anStreamEvent struct {
	Type         string           `json:"type"`
	Message      *anResponse      `json:"message,omitempty"`
	Index        *int             `json:"index,omitempty"`
	ContentBlock *anBlock         `json:"content_block,omitempty"`
	Delta        json.RawMessage  `json:"delta,omitempty"`
	Usage        *anUsage         `json:"usage,omitempty"`
	Error        *neutral.AnError `json:"error,omitempty"`
}

// anDelta is the delta of a content_block_delta or message_delta event.
type anDelta struct {
	Type         string  `json:"type"`
	Text         string  `json:"text"`
	PartialJSON  string  `json:"partial_json"`
	Thinking     string  `json:"thinking"`
	Signature    string  `json:"signature"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}
