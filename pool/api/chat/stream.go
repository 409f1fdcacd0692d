package chat

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// chatStreamDecoder reads a Chat Completions stream: "data: {chunk}" events
// ending with "data: [DONE]". Content, reasoning_content (or "reasoning")
// and tool calls become sequential parts; a tool call's arguments must
// arrive before the next call starts (what OpenAI and the known compatible
// servers do) — arguments for an earlier call are a FieldError rather than
// a reordered answer.
type chatStreamDecoder struct {
	started, done bool
	failed        bool         // an error chunk ended the stream
	cur           int          // neutral index of the open part, -1 none
	curKind       neutral.Kind // kind of the open part
	next          int
	tools         map[int]int    // upstream tool index → neutral index
	toolIDs       map[int]string // upstream tool index → call id
	stop          neutral.StopReason
	stopSeen      bool
	usage         neutral.Usage
	one           [1]neutral.Event // contentChunk's usual result, reused per event, not allocated
}

// newChatStreamDecoder returns a decoder of one Chat Completions stream.
func newChatStreamDecoder() *chatStreamDecoder {
	return &chatStreamDecoder{cur: -1, tools: map[int]int{}, toolIDs: map[int]string{}}
}

func (d *chatStreamDecoder) Decode(name string, data []byte) ([]neutral.Event, error) {
	if string(data) == "[DONE]" {
		d.done = true
		return append(d.closePart(), neutral.Event{Kind: neutral.EvFinish, Stop: d.finalStop(), Usage: d.usage}), nil
	}
	if name != "error" {
		if f, ok := plainContentChunk(data); ok {
			return d.contentChunk(f), nil // the usual text chunk, without json.Unmarshal
		}
	}
	var c chatResponse
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, neutral.FieldErr("stream.chunk", "not JSON: %v", err)
	}
	if c.Error != nil || name == "error" {
		d.failed = true
		return []neutral.Event{{Kind: neutral.EvError, Err: wirefmt.Ptr(neutral.DecodeError(0, data))}}, nil
	}
	var out []neutral.Event
	if !d.started {
		d.started = true
		out = append(out, neutral.Event{Kind: neutral.EvStart, ID: c.ID, Model: c.Model})
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
			out = append(out, d.text(neutral.KindReasoning, rc)...)
		}
		s, ok := wirefmt.PlainString(dl.Content) // the chunk's decode validated it: no second decode
		if !ok && len(dl.Content) > 0 && json.Unmarshal(dl.Content, &s) != nil {
			s = ""
		}
		if s != "" {
			out = append(out, d.text(neutral.KindText, s)...)
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
func (d *chatStreamDecoder) contentChunk(f contentChunk) []neutral.Event {
	if d.started && f.Content != "" && d.cur >= 0 && d.curKind == neutral.KindText {
		// The usual chunk: one more delta of the open text part, in the
		// decoder's own slot (valid until the next Decode, StreamDecoder).
		d.one[0] = neutral.Event{Kind: neutral.EvDelta, Index: d.cur, Part: neutral.Part{Kind: neutral.KindText, Text: f.Content}}
		return d.one[:1:1]
	}
	var out []neutral.Event
	if !d.started {
		d.started = true
		out = append(out, neutral.Event{Kind: neutral.EvStart, ID: string(f.Id), Model: string(f.Model)})
	}
	if f.Content != "" {
		out = append(out, d.text(neutral.KindText, f.Content)...)
	}
	return out
}

func (d *chatStreamDecoder) finalStop() neutral.StopReason {
	if !d.stopSeen {
		return neutral.StopEnd
	}
	return d.stop
}

func (d *chatStreamDecoder) closePart() []neutral.Event {
	if d.cur < 0 {
		return nil
	}
	ev := neutral.Event{Kind: neutral.EvPartStop, Index: d.cur}
	d.cur = -1
	return []neutral.Event{ev}
}

func (d *chatStreamDecoder) open(p neutral.Part) []neutral.Event {
	out := d.closePart()
	d.cur, d.curKind = d.next, p.Kind
	d.next++
	return append(out, neutral.Event{Kind: neutral.EvPartStart, Index: d.cur, Part: p})
}

func (d *chatStreamDecoder) text(k neutral.Kind, s string) []neutral.Event {
	var out []neutral.Event
	if d.cur < 0 || d.curKind != k {
		out = d.open(neutral.Part{Kind: k})
	}
	return append(out, neutral.Event{Kind: neutral.EvDelta, Index: d.cur, Part: neutral.Part{Kind: k, Text: s}})
}

func (d *chatStreamDecoder) toolCall(tc chatToolCall) ([]neutral.Event, error) {
	ui := 0
	if tc.Index != nil {
		ui = *tc.Index
	}
	var out []neutral.Event
	idx, seen := d.tools[ui]
	if !seen || (tc.ID != "" && tc.ID != d.toolIDs[ui]) {
		out = d.open(neutral.Part{Kind: neutral.KindToolCall, CallID: tc.ID, Name: tc.Function.Name})
		d.tools[ui], d.toolIDs[ui] = d.cur, tc.ID
		idx = d.cur
	} else if idx != d.cur {
		return nil, neutral.FieldErr(fmt.Sprintf("stream.choices[0].delta.tool_calls[%d]", ui), "arguments for a tool call after the next one started")
	}
	if tc.Function.Arguments != "" {
		out = append(out, neutral.Event{Kind: neutral.EvDelta, Index: idx, Part: neutral.Part{Kind: neutral.KindToolCall, Args: tc.Function.Arguments}})
	}
	return out, nil
}

func (d *chatStreamDecoder) End() ([]neutral.Event, error) {
	if d.done || d.failed {
		return nil, nil
	}
	if d.stopSeen {
		// Servers that omit [DONE] after the finish_reason chunk.
		d.done = true
		return append(d.closePart(), neutral.Event{Kind: neutral.EvFinish, Stop: d.stop, Usage: d.usage}), nil
	}
	return nil, neutral.FieldErr("stream", "ended before a finish_reason")
}

// chatStreamEncoder writes a Chat Completions stream: a role chunk, content
// / reasoning_content / tool_calls deltas, a finish chunk carrying usage
// (the vLLM form, read both by clients that asked for include_usage and by
// those that did not), then [DONE]. Signatures and encrypted reasoning are
// dropped.
type chatStreamEncoder struct {
	Model   string
	Id      string
	Created int64
	tools   map[int]int // neutral index → tool_calls index
	// noArgs: neutral indexes of tool calls whose arguments have not
	// started; a call that stops with none gets "{}".
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

// chatDeltaOut is the delta of one streamed Chat Completions chunk.
type chatDeltaOut struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

func (e *chatStreamEncoder) Chunk(delta chatDeltaOut, finish *string, u *chatUsage) []byte {
	c := chatChunkOut{ID: e.Id, Object: "chat.completion.chunk", Created: e.Created, Model: e.Model, Usage: u}
	c.Choices = make([]struct {
		Index        int          `json:"index"`
		Delta        chatDeltaOut `json:"delta"`
		FinishReason *string      `json:"finish_reason"`
	}, 1)
	c.Choices[0].Delta, c.Choices[0].FinishReason = delta, finish
	return wirefmt.SSE("", wirefmt.MustJSON(c))
}

// TextChunk is chunk(chatDeltaOut{<field>: &text}, nil, nil) written by
// hand, byte for byte the same: the per-event path of every translated
// stream to a Chat client skips json.Marshal's reflection.
func (e *chatStreamEncoder) TextChunk(dst []byte, field, text string) []byte {
	b := slices.Grow(dst, 160+len(e.Id)+len(e.Model)+len(text)+len(text)/8)
	b = append(b, `data: {"id":`...)
	b = wirefmt.AppendJSONString(b, e.Id)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, e.Created, 10)
	b = append(b, `,"model":`...)
	b = wirefmt.AppendJSONString(b, e.Model)
	b = append(b, `,"choices":[{"index":0,"delta":{"`...)
	b = append(b, field...)
	b = append(b, `":`...)
	b = wirefmt.AppendJSONString(b, text)
	return append(b, "},\"finish_reason\":null}]}\n\n"...)
}

// AppendDelta appends the chunk of a text or reasoning delta to dst; ok is
// false (dst unchanged) for any other event.
func (e *chatStreamEncoder) AppendDelta(dst []byte, ev neutral.Event) ([]byte, bool) {
	switch p := ev.Part; {
	case ev.Kind != neutral.EvDelta:
	case p.Kind == neutral.KindText && p.Text != "":
		return e.TextChunk(dst, "content", p.Text), true
	case p.Kind == neutral.KindReasoning && p.Text != "":
		return e.TextChunk(dst, "reasoning_content", p.Text), true
	}
	return dst, false
}

func (e *chatStreamEncoder) Encode(ev neutral.Event) ([]byte, error) {
	switch ev.Kind {
	case neutral.EvStart:
		e.Id, e.Created, e.tools = ev.ID, Now().Unix(), map[int]int{}
		e.Model = neutral.StartModel(ev, e.Model)
		if e.Id == "" {
			e.Id = neutral.NewID("chatcmpl-")
		}
		return e.Chunk(chatDeltaOut{Role: "assistant", Content: wirefmt.Ptr("")}, nil, nil), nil
	case neutral.EvPartStart:
		if ev.Part.Kind != neutral.KindToolCall {
			return nil, nil
		}
		if e.tools == nil {
			e.tools = map[int]int{}
		}
		n := len(e.tools)
		e.tools[ev.Index] = n
		id := ev.Part.CallID
		if id == "" {
			id = neutral.NewID("call_")
		}
		var tc chatToolCall
		tc.Index, tc.ID, tc.Type, tc.Function.Name = &n, id, "function", ev.Part.Name
		if e.noArgs == nil {
			e.noArgs = map[int]bool{}
		}
		e.noArgs[ev.Index] = true
		return e.Chunk(chatDeltaOut{ToolCalls: []chatToolCall{tc}}, nil, nil), nil
	case neutral.EvPartStop:
		if !e.noArgs[ev.Index] {
			return nil, nil
		}
		// A tool called with no input: Anthropic streams no (or an empty)
		// argument fragment; a Chat client parses "" as no JSON.
		delete(e.noArgs, ev.Index)
		n := e.tools[ev.Index]
		var tc chatToolCall
		tc.Index, tc.Function.Arguments = &n, "{}"
		return e.Chunk(chatDeltaOut{ToolCalls: []chatToolCall{tc}}, nil, nil), nil
	case neutral.EvDelta:
		if b, ok := e.AppendDelta(nil, ev); ok {
			return b, nil
		}
		p := ev.Part
		switch {
		case p.Kind == neutral.KindToolCall && p.Args != "":
			delete(e.noArgs, ev.Index)
			n := e.tools[ev.Index]
			var tc chatToolCall
			tc.Index, tc.Function.Arguments = &n, p.Args
			return e.Chunk(chatDeltaOut{ToolCalls: []chatToolCall{tc}}, nil, nil), nil
		}
		return nil, nil
	case neutral.EvFinish:
		fr := chatStopOf(ev.Stop)
		out := e.Chunk(chatDeltaOut{}, &fr, chatUsageOf(ev.Usage))
		return append(out, "data: [DONE]\n\n"...), nil
	case neutral.EvPing:
		return []byte(": ping\n\n"), nil
	case neutral.EvError:
		_, body := EncodeOpenAIError(*ev.Err)
		return wirefmt.SSE("", body), nil
	}
	return nil, nil
}
