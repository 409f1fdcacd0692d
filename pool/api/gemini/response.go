package gemini

import (
	"encoding/json"
	"fmt"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// Gemini answer wire types (one GenerateContentResponse; a stream sends a
// sequence of them).
type gmResponse struct {
	Candidates     []gmCandidate `json:"candidates"`
	UsageMetadata  *gmUsage      `json:"usageMetadata,omitempty"`
	ModelVersion   string        `json:"modelVersion,omitempty"`
	ResponseID     string        `json:"responseId,omitempty"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason,omitempty"`
	} `json:"promptFeedback,omitempty"`
	Error json.RawMessage `json:"error,omitempty"`
}

// gmCandidate is one candidate of a generateContent answer.
type gmCandidate struct {
	Content      *gmContent `json:"content,omitempty"`
	FinishReason string     `json:"finishReason,omitempty"`
	Index        int        `json:"index"`
}

type gmUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount,omitempty"`
}

func (u *gmUsage) neutral() neutral.Usage {
	if u == nil {
		return neutral.Usage{}
	}
	return neutral.Usage{Input: u.PromptTokenCount - u.CachedContentTokenCount, CacheRead: u.CachedContentTokenCount,
		Output: u.CandidatesTokenCount + u.ThoughtsTokenCount, Reasoning: u.ThoughtsTokenCount}
}

func gmUsageOf(u neutral.Usage) *gmUsage {
	prompt := u.Input + u.CacheRead + u.CacheWrite
	return &gmUsage{PromptTokenCount: prompt, CandidatesTokenCount: u.Output - u.Reasoning, TotalTokenCount: prompt + u.Output,
		CachedContentTokenCount: u.CacheRead, ThoughtsTokenCount: u.Reasoning}
}

func gmStop(s string, toolCall bool) neutral.StopReason {
	switch s {
	case "MAX_TOKENS":
		return neutral.StopMaxTokens
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		return neutral.StopFilter
	}
	if toolCall {
		return neutral.StopToolUse
	}
	return neutral.StopEnd
}

func gmStopOf(s neutral.StopReason) string {
	switch s {
	case neutral.StopMaxTokens:
		return "MAX_TOKENS"
	case neutral.StopFilter:
		return "SAFETY"
	}
	return "STOP" // Gemini ends tool calls with STOP too
}

// decodeGeminiResponse reads a non-streamed generateContent answer (the
// first candidate). A prompt blocked by safety is a StopFilter answer with
// no parts.
func decodeGeminiResponse(body []byte) (*neutral.Response, error) {
	var w gmResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, neutral.WireErr("body", err)
	}
	r := &neutral.Response{ID: w.ResponseID, Model: w.ModelVersion, Usage: w.UsageMetadata.neutral()}
	if len(w.Candidates) == 0 {
		if w.PromptFeedback != nil && w.PromptFeedback.BlockReason != "" {
			r.Stop = neutral.StopFilter
			return r, nil
		}
		return nil, neutral.FieldErr("candidates", "no candidate in the answer")
	}
	c := w.Candidates[0]
	pending, calls, tool := map[string][]string{}, 0, false
	if c.Content != nil {
		for j, p := range c.Content.Parts {
			np, err := decodeGmPart(fmt.Sprintf("candidates[0].content.parts[%d]", j), p, pending, &calls)
			if err != nil {
				return nil, err
			}
			if np.Kind == neutral.KindToolCall {
				tool = true
				if p.FunctionCall.ID == "" {
					np.CallID = neutral.NewID("call_")
				}
			}
			if np.Kind != 0 {
				r.Parts = append(r.Parts, np)
			}
		}
	}
	r.Stop = gmStop(c.FinishReason, tool)
	return r, nil
}

// encodeGeminiResponse writes r as a generateContent answer naming model.
func encodeGeminiResponse(r *neutral.Response, model string) ([]byte, error) {
	c := gmContent{Role: "model", Parts: []gmPart{}}
	for i, p := range r.Parts {
		gp, err := gmAnswerPart(fmt.Sprintf("content[%d]", i), p)
		if err != nil {
			return nil, err
		}
		c.Parts = append(c.Parts, gp)
	}
	w := gmResponse{Candidates: []gmCandidate{{Content: &c, FinishReason: gmStopOf(r.Stop)}},
		UsageMetadata: gmUsageOf(r.Usage), ModelVersion: model, ResponseID: r.ID}
	return wirefmt.MustJSON(w), nil
}

func gmAnswerPart(field string, p neutral.Part) (gmPart, error) {
	switch p.Kind {
	case neutral.KindText:
		t := p.Text
		return gmPart{Text: &t}, nil
	case neutral.KindReasoning:
		t := p.Text
		return gmPart{Text: &t, Thought: true}, nil
	case neutral.KindToolCall:
		args, err := neutral.RawArgs(field+".arguments", p.Args)
		return gmPart{FunctionCall: &gmCall{ID: p.CallID, Name: p.Name, Args: args}}, err
	}
	return gmPart{}, neutral.FieldErr(field, "%s output is not expressible in Gemini", p.Kind)
}
