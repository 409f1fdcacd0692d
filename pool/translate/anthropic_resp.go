package translate

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

func (u anUsage) neutral() Usage {
	return Usage{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens}
}

func anUsageOf(u Usage) anUsage {
	return anUsage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadInputTokens: u.CacheRead, CacheCreationInputTokens: u.CacheWrite}
}

// newID returns a fresh id with prefix; tests replace it for golden output.
var newID = func(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// anStop maps Anthropic stop reasons; "refusal" is StopFilter, "pause_turn"
// (a server tool paused) is an end.
func anStop(s string) StopReason {
	switch s {
	case "max_tokens", "model_context_window_exceeded":
		return StopMaxTokens
	case "stop_sequence":
		return StopSequence
	case "tool_use":
		return StopToolUse
	case "refusal":
		return StopFilter
	}
	return StopEnd
}

func anStopOf(s StopReason) string {
	if s == StopFilter {
		return "refusal"
	}
	if s == "" {
		return "end_turn"
	}
	return string(s)
}

// DecodeAnthropicResponse reads a non-streamed Messages answer.
func DecodeAnthropicResponse(body []byte) (*Response, error) {
	var w anResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, wireErr("body", err)
	}
	r := &Response{ID: w.ID, Model: w.Model, Usage: w.Usage.neutral()}
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

// EncodeAnthropicResponse writes r as a Messages answer naming model.
func EncodeAnthropicResponse(r *Response, model string) ([]byte, error) {
	w := anResponse{ID: r.ID, Type: "message", Role: "assistant", Model: model, Content: []anBlock{}, Usage: anUsageOf(r.Usage)}
	if w.ID == "" {
		w.ID = newID("msg_")
	}
	stop := anStopOf(r.Stop)
	w.StopReason = &stop
	if r.StopSequence != "" {
		w.StopSequence = &r.StopSequence
	}
	for i, p := range r.Parts {
		if p.Kind == KindToolCall && p.CallID == "" {
			p.CallID = newID("toolu_")
		}
		if p.Kind == KindReasoning && p.Redacted == "" {
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
	return mustJSON(w), nil
}

// Anthropic stream wire type: the union of the event payloads.
type anStreamEvent struct {
	Type         string          `json:"type"`
	Message      *anResponse     `json:"message,omitempty"`
	Index        *int            `json:"index,omitempty"`
	ContentBlock *anBlock        `json:"content_block,omitempty"`
	Delta        json.RawMessage `json:"delta,omitempty"`
	Usage        *anUsage        `json:"usage,omitempty"`
	Error        *anError        `json:"error,omitempty"`
}

type anDelta struct {
	Type         string  `json:"type"`
	Text         string  `json:"text"`
	PartialJSON  string  `json:"partial_json"`
	Thinking     string  `json:"thinking"`
	Signature    string  `json:"signature"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

type anError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}
