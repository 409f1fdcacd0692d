package translate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// chatStreamDecoder reads a Chat Completions stream: "data: {chunk}" events
// ending with "data: [DONE]". Content, reasoning_content (or "reasoning")
// and tool calls become sequential parts; a tool call's arguments must
// arrive before the next call starts (what OpenAI and the known compatible
// servers do) — arguments for an earlier call are a FieldError rather than
// a reordered answer.
type chatStreamDecoder struct {
	started, done bool
	failed        bool // an error chunk ended the stream
	cur           int  // neutral index of the open part, -1 none
	curKind       Kind // kind of the open part
	next          int
	tools         map[int]int    // upstream tool index → neutral index
	toolIDs       map[int]string // upstream tool index → call id
	stop          StopReason
	stopSeen      bool
	usage         Usage
	one           [1]Event // contentChunk's usual result, reused per event, not allocated
}

func newChatStreamDecoder() *chatStreamDecoder {
	return &chatStreamDecoder{cur: -1, tools: map[int]int{}, toolIDs: map[int]string{}}
}

func (d *chatStreamDecoder) Decode(name string, data []byte) ([]Event, error) {
	if string(data) == "[DONE]" {
		d.done = true
		return append(d.closePart(), Event{Kind: EvFinish, Stop: d.finalStop(), Usage: d.usage}), nil
	}
	if name != "error" {
		if f, ok := plainContentChunk(data); ok {
			return d.contentChunk(f), nil // the usual text chunk, without json.Unmarshal
		}
	}
	var c chatResponse
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fieldErr("stream.chunk", "not JSON: %v", err)
	}
	if c.Error != nil || name == "error" {
		d.failed = true
		return []Event{{Kind: EvError, Err: ptr(DecodeError(0, data))}}, nil
	}
	var out []Event
	if !d.started {
		d.started = true
		out = append(out, Event{Kind: EvStart, ID: c.ID, Model: c.Model})
	}
	if c.Usage != nil {
		d.usage = c.Usage.neutral()
	}
	if len(c.Choices) == 0 {
		return out, nil
	}
	ch := c.Choices[0]
	if dl := ch.Delta; dl != nil {
		if rc := firstNonNil(dl.ReasoningContent, dl.Reasoning); rc != "" {
			out = append(out, d.text(KindReasoning, rc)...)
		}
		s, ok := plainString(dl.Content) // the chunk's decode validated it: no second decode
		if !ok && len(dl.Content) > 0 && json.Unmarshal(dl.Content, &s) != nil {
			s = ""
		}
		if s != "" {
			out = append(out, d.text(KindText, s)...)
		}
		for _, tc := range dl.ToolCalls {
			evs, err := d.toolCall(tc)
			if err != nil {
				return nil, err
			}
			out = append(out, evs...)
		}
	}
	if ch.FinishReason != nil && *ch.FinishReason != "" {
		d.stop, d.stopSeen = chatStop(*ch.FinishReason), true
		out = append(out, d.closePart()...)
	}
	return out, nil
}

// contentChunk is Decode of a plainContentChunk.
func (d *chatStreamDecoder) contentChunk(f contentChunk) []Event {
	if d.started && f.content != "" && d.cur >= 0 && d.curKind == KindText {
		// The usual chunk: one more delta of the open text part, in the
		// decoder's own slot (valid until the next Decode, StreamDecoder).
		d.one[0] = Event{Kind: EvDelta, Index: d.cur, Part: Part{Kind: KindText, Text: f.content}}
		return d.one[:1:1]
	}
	var out []Event
	if !d.started {
		d.started = true
		out = append(out, Event{Kind: EvStart, ID: string(f.id), Model: string(f.model)})
	}
	if f.content != "" {
		out = append(out, d.text(KindText, f.content)...)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func (d *chatStreamDecoder) finalStop() StopReason {
	if !d.stopSeen {
		return StopEnd
	}
	return d.stop
}

func (d *chatStreamDecoder) closePart() []Event {
	if d.cur < 0 {
		return nil
	}
	ev := Event{Kind: EvPartStop, Index: d.cur}
	d.cur = -1
	return []Event{ev}
}

func (d *chatStreamDecoder) open(p Part) []Event {
	out := d.closePart()
	d.cur, d.curKind = d.next, p.Kind
	d.next++
	return append(out, Event{Kind: EvPartStart, Index: d.cur, Part: p})
}

func (d *chatStreamDecoder) text(k Kind, s string) []Event {
	var out []Event
	if d.cur < 0 || d.curKind != k {
		out = d.open(Part{Kind: k})
	}
	return append(out, Event{Kind: EvDelta, Index: d.cur, Part: Part{Kind: k, Text: s}})
}

func (d *chatStreamDecoder) toolCall(tc chatToolCall) ([]Event, error) {
	ui := 0
	if tc.Index != nil {
		ui = *tc.Index
	}
	var out []Event
	idx, seen := d.tools[ui]
	if !seen || (tc.ID != "" && tc.ID != d.toolIDs[ui]) {
		out = d.open(Part{Kind: KindToolCall, CallID: tc.ID, Name: tc.Function.Name})
		d.tools[ui], d.toolIDs[ui] = d.cur, tc.ID
		idx = d.cur
	} else if idx != d.cur {
		return nil, fieldErr(fmt.Sprintf("stream.choices[0].delta.tool_calls[%d]", ui), "arguments for a tool call after the next one started")
	}
	if tc.Function.Arguments != "" {
		out = append(out, Event{Kind: EvDelta, Index: idx, Part: Part{Kind: KindToolCall, Args: tc.Function.Arguments}})
	}
	return out, nil
}

func (d *chatStreamDecoder) End() ([]Event, error) {
	if d.done || d.failed {
		return nil, nil
	}
	if d.stopSeen {
		// Servers that omit [DONE] after the finish_reason chunk.
		d.done = true
		return append(d.closePart(), Event{Kind: EvFinish, Stop: d.stop, Usage: d.usage}), nil
	}
	return nil, fieldErr("stream", "ended before a finish_reason")
}

// chatStreamEncoder writes a Chat Completions stream: a role chunk, content
// / reasoning_content / tool_calls deltas, a finish chunk carrying usage
// (the vLLM form, read both by clients that asked for include_usage and by
// those that did not), then [DONE]. Signatures and encrypted reasoning are
// dropped.
type chatStreamEncoder struct {
	model   string
	id      string
	created int64
	tools   map[int]int // neutral index → tool_calls index
	// noArgs: neutral indexes of tool calls whose arguments have not
	// started; a call that stops with none gets "{}" (SPEC POOL-25).
	noArgs map[int]bool
}

// chatChunkOut is an encoded chunk: only the delta fields that are set.
type chatChunkOut struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int          `json:"index"`
		Delta        chatDeltaOut `json:"delta"`
		FinishReason *string      `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage `json:"usage,omitempty"`
}

type chatDeltaOut struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

func (e *chatStreamEncoder) chunk(delta chatDeltaOut, finish *string, u *chatUsage) []byte {
	c := chatChunkOut{ID: e.id, Object: "chat.completion.chunk", Created: e.created, Model: e.model, Usage: u}
	c.Choices = make([]struct {
		Index        int          `json:"index"`
		Delta        chatDeltaOut `json:"delta"`
		FinishReason *string      `json:"finish_reason"`
	}, 1)
	c.Choices[0].Delta, c.Choices[0].FinishReason = delta, finish
	return sse("", mustJSON(c))
}

// textChunk is chunk(chatDeltaOut{<field>: &text}, nil, nil) written by
// hand, byte for byte the same: the per-event path of every translated
// stream to a Chat client skips json.Marshal's reflection.
func (e *chatStreamEncoder) textChunk(dst []byte, field, text string) []byte {
	b := slices.Grow(dst, 160+len(e.id)+len(e.model)+len(text)+len(text)/8)
	b = append(b, `data: {"id":`...)
	b = appendJSONString(b, e.id)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, e.created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, e.model)
	b = append(b, `,"choices":[{"index":0,"delta":{"`...)
	b = append(b, field...)
	b = append(b, `":`...)
	b = appendJSONString(b, text)
	return append(b, "},\"finish_reason\":null}]}\n\n"...)
}

// appendDelta appends the chunk of a text or reasoning delta to dst; ok is
// false (dst unchanged) for any other event.
func (e *chatStreamEncoder) appendDelta(dst []byte, ev Event) ([]byte, bool) {
	switch p := ev.Part; {
	case ev.Kind != EvDelta:
	case p.Kind == KindText && p.Text != "":
		return e.textChunk(dst, "content", p.Text), true
	case p.Kind == KindReasoning && p.Text != "":
		return e.textChunk(dst, "reasoning_content", p.Text), true
	}
	return dst, false
}

func (e *chatStreamEncoder) Encode(ev Event) ([]byte, error) {
	switch ev.Kind {
	case EvStart:
		e.id, e.created, e.tools = ev.ID, now().Unix(), map[int]int{}
		e.model = startModel(ev, e.model)
		if e.id == "" {
			e.id = newID("chatcmpl-")
		}
		return e.chunk(chatDeltaOut{Role: "assistant", Content: ptr("")}, nil, nil), nil
	case EvPartStart:
		if ev.Part.Kind != KindToolCall {
			return nil, nil
		}
		if e.tools == nil {
			e.tools = map[int]int{}
		}
		n := len(e.tools)
		e.tools[ev.Index] = n
		id := ev.Part.CallID
		if id == "" {
			id = newID("call_")
		}
		var tc chatToolCall
		tc.Index, tc.ID, tc.Type, tc.Function.Name = &n, id, "function", ev.Part.Name
		if e.noArgs == nil {
			e.noArgs = map[int]bool{}
		}
		e.noArgs[ev.Index] = true
		return e.chunk(chatDeltaOut{ToolCalls: []chatToolCall{tc}}, nil, nil), nil
	case EvPartStop:
		if !e.noArgs[ev.Index] {
			return nil, nil
		}
		// A tool called with no input: Anthropic streams no (or an empty)
		// argument fragment; a Chat client parses "" as no JSON.
		delete(e.noArgs, ev.Index)
		n := e.tools[ev.Index]
		var tc chatToolCall
		tc.Index, tc.Function.Arguments = &n, "{}"
		return e.chunk(chatDeltaOut{ToolCalls: []chatToolCall{tc}}, nil, nil), nil
	case EvDelta:
		if b, ok := e.appendDelta(nil, ev); ok {
			return b, nil
		}
		p := ev.Part
		switch {
		case p.Kind == KindToolCall && p.Args != "":
			delete(e.noArgs, ev.Index)
			n := e.tools[ev.Index]
			var tc chatToolCall
			tc.Index, tc.Function.Arguments = &n, p.Args
			return e.chunk(chatDeltaOut{ToolCalls: []chatToolCall{tc}}, nil, nil), nil
		}
		return nil, nil
	case EvFinish:
		fr := chatStopOf(ev.Stop)
		out := e.chunk(chatDeltaOut{}, &fr, chatUsageOf(ev.Usage))
		return append(out, "data: [DONE]\n\n"...), nil
	case EvPing:
		return []byte(": ping\n\n"), nil
	case EvError:
		_, body := encodeOpenAIError(*ev.Err)
		return sse("", body), nil
	}
	return nil, nil
}
