package gemini

import (
	"encoding/json"
	"fmt"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// geminiStreamDecoder reads a streamGenerateContent?alt=sse stream: each
// event is a whole GenerateContentResponse whose text parts are deltas and
// whose function calls are complete. The stream ends at EOF; the chunk with
// a finishReason ends the answer.
type geminiStreamDecoder struct {
	started, finished bool
	failed            bool // an error chunk ended the stream
	cur               int  // open part + 1; 0 none
	curKind           neutral.Kind
	next              int
	tool              bool
	usage             neutral.Usage
}

func (d *geminiStreamDecoder) open(p neutral.Part) []neutral.Event {
	out := d.close()
	d.cur, d.curKind = d.next+1, p.Kind
	d.next++
	return append(out, neutral.Event{Kind: neutral.EvPartStart, Index: d.cur - 1, Part: p})
}

func (d *geminiStreamDecoder) close() []neutral.Event {
	if d.cur == 0 {
		return nil
	}
	i := d.cur - 1
	d.cur = 0
	return []neutral.Event{{Kind: neutral.EvPartStop, Index: i}}
}

func (d *geminiStreamDecoder) Decode(_ string, data []byte) ([]neutral.Event, error) {
	var w gmResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, neutral.FieldErr("stream.chunk", "not JSON: %v", err)
	}
	if len(w.Error) > 0 {
		d.failed = true
		return []neutral.Event{{Kind: neutral.EvError, Err: wirefmt.Ptr(neutral.DecodeError(0, data))}}, nil
	}
	if d.finished {
		return nil, nil
	}
	var out []neutral.Event
	if !d.started {
		d.started = true
		out = append(out, neutral.Event{Kind: neutral.EvStart, ID: w.ResponseID, Model: w.ModelVersion})
	}
	if w.UsageMetadata != nil {
		d.usage = w.UsageMetadata.neutral()
	}
	if len(w.Candidates) == 0 {
		if w.PromptFeedback != nil && w.PromptFeedback.BlockReason != "" {
			d.finished = true
			out = append(out, d.close()...)
			return append(out, neutral.Event{Kind: neutral.EvFinish, Stop: neutral.StopFilter, Usage: d.usage}), nil
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
		out = append(out, neutral.Event{Kind: neutral.EvFinish, Stop: gmStop(c.FinishReason, d.tool), Usage: d.usage})
	}
	return out, nil
}

func (d *geminiStreamDecoder) part(j int, p gmPart) ([]neutral.Event, error) {
	var out []neutral.Event
	switch {
	case p.Text != nil:
		k := neutral.KindText
		if p.Thought {
			k = neutral.KindReasoning
		}
		if *p.Text == "" {
			return nil, nil
		}
		if d.cur == 0 || d.curKind != k {
			out = d.open(neutral.Part{Kind: k})
		}
		return append(out, neutral.Event{Kind: neutral.EvDelta, Index: d.cur - 1, Part: neutral.Part{Kind: k, Text: *p.Text}}), nil
	case p.FunctionCall != nil:
		d.tool = true
		id := p.FunctionCall.ID
		if id == "" {
			id = neutral.NewID("call_")
		}
		out = d.open(neutral.Part{Kind: neutral.KindToolCall, CallID: id, Name: p.FunctionCall.Name})
		out = append(out, neutral.Event{Kind: neutral.EvDelta, Index: d.cur - 1, Part: neutral.Part{Kind: neutral.KindToolCall, Args: neutral.ArgsOrEmpty(string(p.FunctionCall.Args))}})
		return append(out, d.close()...), nil
	case p.ThoughtSignature != "":
		return nil, nil
	}
	return nil, neutral.FieldErr(fmt.Sprintf("stream.candidates[0].content.parts[%d]", j), "part kind is not translatable")
}

func (d *geminiStreamDecoder) End() ([]neutral.Event, error) {
	if !d.finished && !d.failed {
		return nil, neutral.FieldErr("stream", "ended before a finishReason")
	}
	return nil, nil
}

// geminiStreamEncoder writes a streamGenerateContent?alt=sse stream: one
// Chunk per text or thought delta, one per complete function call (its
// streamed arguments are collected until the call ends: Gemini sends args
// as one object), and a last chunk with finishReason and usageMetadata.
// Pings are not sent (Gemini streams have none). Signatures and encrypted
// reasoning are dropped.
type geminiStreamEncoder struct {
	Model string
	id    string
	call  *gmCall
	args  []byte
}

func (e *geminiStreamEncoder) Chunk(parts []gmPart, finish string, u *gmUsage) []byte {
	w := gmResponse{Candidates: []gmCandidate{{Content: &gmContent{Role: "model", Parts: parts}, FinishReason: finish}},
		UsageMetadata: u, ModelVersion: e.Model, ResponseID: e.id}
	return wirefmt.SSE("", wirefmt.MustJSON(w))
}

func (e *geminiStreamEncoder) Encode(ev neutral.Event) ([]byte, error) {
	switch ev.Kind {
	case neutral.EvStart:
		e.id, e.Model = ev.ID, neutral.StartModel(ev, e.Model)
	case neutral.EvPartStart:
		if ev.Part.Kind == neutral.KindToolCall {
			e.call, e.args = &gmCall{ID: ev.Part.CallID, Name: ev.Part.Name}, e.args[:0]
		}
	case neutral.EvDelta:
		p := ev.Part
		switch {
		case p.Kind == neutral.KindText && p.Text != "":
			return e.Chunk([]gmPart{{Text: &p.Text}}, "", nil), nil
		case p.Kind == neutral.KindReasoning && p.Text != "":
			return e.Chunk([]gmPart{{Text: &p.Text, Thought: true}}, "", nil), nil
		case p.Kind == neutral.KindToolCall && e.call != nil:
			e.args = append(e.args, p.Args...)
		}
	case neutral.EvPartStop:
		if e.call == nil {
			return nil, nil
		}
		args, err := neutral.RawArgs("stream.tool_call.arguments", string(e.args))
		if err != nil {
			return nil, err
		}
		e.call.Args = args
		c := e.call
		e.call = nil
		return e.Chunk([]gmPart{{FunctionCall: c}}, "", nil), nil
	case neutral.EvFinish:
		empty := ""
		return e.Chunk([]gmPart{{Text: &empty}}, gmStopOf(ev.Stop), gmUsageOf(ev.Usage)), nil
	case neutral.EvError:
		_, body := encodeGeminiError(*ev.Err)
		return wirefmt.SSE("", body), nil
	}
	return nil, nil
}
