package translate

import (
	"encoding/json"
	"fmt"
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

func (u *gmUsage) neutral() Usage {
	if u == nil {
		return Usage{}
	}
	return Usage{Input: u.PromptTokenCount - u.CachedContentTokenCount, CacheRead: u.CachedContentTokenCount,
		Output: u.CandidatesTokenCount + u.ThoughtsTokenCount, Reasoning: u.ThoughtsTokenCount}
}

func gmUsageOf(u Usage) *gmUsage {
	prompt := u.Input + u.CacheRead + u.CacheWrite
	return &gmUsage{PromptTokenCount: prompt, CandidatesTokenCount: u.Output - u.Reasoning, TotalTokenCount: prompt + u.Output,
		CachedContentTokenCount: u.CacheRead, ThoughtsTokenCount: u.Reasoning}
}

func gmStop(s string, toolCall bool) StopReason {
	switch s {
	case "MAX_TOKENS":
		return StopMaxTokens
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		return StopFilter
	}
	if toolCall {
		return StopToolUse
	}
	return StopEnd
}

func gmStopOf(s StopReason) string {
	switch s {
	case StopMaxTokens:
		return "MAX_TOKENS"
	case StopFilter:
		return "SAFETY"
	}
	return "STOP" // Gemini ends tool calls with STOP too
}

// DecodeGeminiResponse reads a non-streamed generateContent answer (the
// first candidate). A prompt blocked by safety is a StopFilter answer with
// no parts.
func DecodeGeminiResponse(body []byte) (*Response, error) {
	var w gmResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, wireErr("body", err)
	}
	r := &Response{ID: w.ResponseID, Model: w.ModelVersion, Usage: w.UsageMetadata.neutral()}
	if len(w.Candidates) == 0 {
		if w.PromptFeedback != nil && w.PromptFeedback.BlockReason != "" {
			r.Stop = StopFilter
			return r, nil
		}
		return nil, fieldErr("candidates", "no candidate in the answer")
	}
	c := w.Candidates[0]
	pending, calls, tool := map[string][]string{}, 0, false
	if c.Content != nil {
		for j, p := range c.Content.Parts {
			np, err := decodeGmPart(fmt.Sprintf("candidates[0].content.parts[%d]", j), p, pending, &calls)
			if err != nil {
				return nil, err
			}
			if np.Kind == KindToolCall {
				tool = true
				if p.FunctionCall.ID == "" {
					np.CallID = newID("call_")
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

// EncodeGeminiResponse writes r as a generateContent answer naming model.
func EncodeGeminiResponse(r *Response, model string) ([]byte, error) {
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
	return mustJSON(w), nil
}

func gmAnswerPart(field string, p Part) (gmPart, error) {
	switch p.Kind {
	case KindText:
		t := p.Text
		return gmPart{Text: &t}, nil
	case KindReasoning:
		t := p.Text
		return gmPart{Text: &t, Thought: true}, nil
	case KindToolCall:
		args, err := rawArgs(field+".arguments", p.Args)
		return gmPart{FunctionCall: &gmCall{ID: p.CallID, Name: p.Name, Args: args}}, err
	}
	return gmPart{}, fieldErr(field, "%s output is not expressible in Gemini", p.Kind)
}

// geminiStreamDecoder reads a streamGenerateContent?alt=sse stream: each
// event is a whole GenerateContentResponse whose text parts are deltas and
// whose function calls are complete. The stream ends at EOF; the chunk with
// a finishReason ends the answer.
type geminiStreamDecoder struct {
	started, finished bool
	failed            bool // an error chunk ended the stream
	cur               int  // open part + 1; 0 none
	curKind           Kind
	next              int
	tool              bool
	usage             Usage
}

func (d *geminiStreamDecoder) open(p Part) []Event {
	out := d.close()
	d.cur, d.curKind = d.next+1, p.Kind
	d.next++
	return append(out, Event{Kind: EvPartStart, Index: d.cur - 1, Part: p})
}

func (d *geminiStreamDecoder) close() []Event {
	if d.cur == 0 {
		return nil
	}
	i := d.cur - 1
	d.cur = 0
	return []Event{{Kind: EvPartStop, Index: i}}
}

func (d *geminiStreamDecoder) Decode(_ string, data []byte) ([]Event, error) {
	var w gmResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fieldErr("stream.chunk", "not JSON: %v", err)
	}
	if len(w.Error) > 0 {
		d.failed = true
		return []Event{{Kind: EvError, Err: ptr(DecodeError(0, data))}}, nil
	}
	if d.finished {
		return nil, nil
	}
	var out []Event
	if !d.started {
		d.started = true
		out = append(out, Event{Kind: EvStart, ID: w.ResponseID, Model: w.ModelVersion})
	}
	if w.UsageMetadata != nil {
		d.usage = w.UsageMetadata.neutral()
	}
	if len(w.Candidates) == 0 {
		if w.PromptFeedback != nil && w.PromptFeedback.BlockReason != "" {
			d.finished = true
			out = append(out, d.close()...)
			return append(out, Event{Kind: EvFinish, Stop: StopFilter, Usage: d.usage}), nil
		}
		return out, nil
	}
	c := w.Candidates[0]
	if c.Content != nil {
		for j, p := range c.Content.Parts {
			evs, err := d.part(j, p)
			if err != nil {
				return nil, err
			}
			out = append(out, evs...)
		}
	}
	if c.FinishReason != "" {
		d.finished = true
		out = append(out, d.close()...)
		out = append(out, Event{Kind: EvFinish, Stop: gmStop(c.FinishReason, d.tool), Usage: d.usage})
	}
	return out, nil
}

func (d *geminiStreamDecoder) part(j int, p gmPart) ([]Event, error) {
	var out []Event
	switch {
	case p.Text != nil:
		k := KindText
		if p.Thought {
			k = KindReasoning
		}
		if *p.Text == "" {
			return nil, nil
		}
		if d.cur == 0 || d.curKind != k {
			out = d.open(Part{Kind: k})
		}
		return append(out, Event{Kind: EvDelta, Index: d.cur - 1, Part: Part{Kind: k, Text: *p.Text}}), nil
	case p.FunctionCall != nil:
		d.tool = true
		id := p.FunctionCall.ID
		if id == "" {
			id = newID("call_")
		}
		out = d.open(Part{Kind: KindToolCall, CallID: id, Name: p.FunctionCall.Name})
		out = append(out, Event{Kind: EvDelta, Index: d.cur - 1, Part: Part{Kind: KindToolCall, Args: argsOrEmpty(string(p.FunctionCall.Args))}})
		return append(out, d.close()...), nil
	case p.ThoughtSignature != "":
		return nil, nil
	}
	return nil, fieldErr(fmt.Sprintf("stream.candidates[0].content.parts[%d]", j), "part kind is not translatable")
}

func (d *geminiStreamDecoder) End() ([]Event, error) {
	if !d.finished && !d.failed {
		return nil, fieldErr("stream", "ended before a finishReason")
	}
	return nil, nil
}

// geminiStreamEncoder writes a streamGenerateContent?alt=sse stream: one
// chunk per text or thought delta, one per complete function call (its
// streamed arguments are collected until the call ends: Gemini sends args
// as one object), and a last chunk with finishReason and usageMetadata.
// Pings are not sent (Gemini streams have none). Signatures and encrypted
// reasoning are dropped.
type geminiStreamEncoder struct {
	model string
	id    string
	call  *gmCall
	args  []byte
}

func (e *geminiStreamEncoder) chunk(parts []gmPart, finish string, u *gmUsage) []byte {
	w := gmResponse{Candidates: []gmCandidate{{Content: &gmContent{Role: "model", Parts: parts}, FinishReason: finish}},
		UsageMetadata: u, ModelVersion: e.model, ResponseID: e.id}
	return sse("", mustJSON(w))
}

func (e *geminiStreamEncoder) Encode(ev Event) ([]byte, error) {
	switch ev.Kind {
	case EvStart:
		e.id, e.model = ev.ID, startModel(ev, e.model)
	case EvPartStart:
		if ev.Part.Kind == KindToolCall {
			e.call, e.args = &gmCall{ID: ev.Part.CallID, Name: ev.Part.Name}, e.args[:0]
		}
	case EvDelta:
		p := ev.Part
		switch {
		case p.Kind == KindText && p.Text != "":
			return e.chunk([]gmPart{{Text: &p.Text}}, "", nil), nil
		case p.Kind == KindReasoning && p.Text != "":
			return e.chunk([]gmPart{{Text: &p.Text, Thought: true}}, "", nil), nil
		case p.Kind == KindToolCall && e.call != nil:
			e.args = append(e.args, p.Args...)
		}
	case EvPartStop:
		if e.call == nil {
			return nil, nil
		}
		args, err := rawArgs("stream.tool_call.arguments", string(e.args))
		if err != nil {
			return nil, err
		}
		e.call.Args = args
		c := e.call
		e.call = nil
		return e.chunk([]gmPart{{FunctionCall: c}}, "", nil), nil
	case EvFinish:
		empty := ""
		return e.chunk([]gmPart{{Text: &empty}}, gmStopOf(ev.Stop), gmUsageOf(ev.Usage)), nil
	case EvError:
		_, body := encodeGeminiError(*ev.Err)
		return sse("", body), nil
	}
	return nil, nil
}
