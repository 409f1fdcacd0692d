package translate

import (
	"encoding/json"
	"slices"
	"strconv"
)

// anthropicStreamDecoder reads a Messages stream (docs/POOL.md, streams):
// message_start, per block content_block_start/_delta/_stop, message_delta,
// message_stop; ping and error anywhere. Upstream block indexes are
// renumbered 0, 1, 2… in arrival order.
type anthropicStreamDecoder struct {
	finished bool
	failed   bool        // an error event ended the stream
	next     int         // next neutral index
	open     map[int]int // upstream index → neutral index
	stop     StopReason
	stopSeq  string
	usage    Usage
	one      [1]Event // blockText's result, reused per event, not allocated
}

func (d *anthropicStreamDecoder) Decode(name string, data []byte) ([]Event, error) {
	if idx, text, ok := plainBlockText(data); ok {
		return d.blockText(idx, text) // the usual text delta, without json.Unmarshal
	}
	var ev anStreamEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fieldErr("stream."+name, "not JSON: %v", err)
	}
	if ev.Type == "" {
		ev.Type = name
	}
	switch ev.Type {
	case "message_start":
		out := Event{Kind: EvStart}
		if m := ev.Message; m != nil {
			out.ID, out.Model, out.Usage = m.ID, m.Model, m.Usage.neutral()
			d.usage = out.Usage
		}
		return []Event{out}, nil
	case "content_block_start":
		return d.blockStart(ev)
	case "content_block_delta":
		return d.blockDelta(ev)
	case "content_block_stop":
		if ev.Index == nil {
			return nil, fieldErr("stream.content_block_stop.index", "missing")
		}
		i, ok := d.open[*ev.Index]
		if !ok {
			return nil, fieldErr("stream.content_block_stop.index", "block %d is not open", *ev.Index)
		}
		delete(d.open, *ev.Index)
		return []Event{{Kind: EvPartStop, Index: i}}, nil
	case "message_delta":
		var dl anDelta
		_ = json.Unmarshal(ev.Delta, &dl)
		if dl.StopReason != nil {
			d.stop = anStop(*dl.StopReason)
		}
		if dl.StopSequence != nil {
			d.stopSeq = *dl.StopSequence
		}
		if u := ev.Usage; u != nil {
			// message_delta usage is cumulative; input fields only when sent.
			d.usage.Output = u.OutputTokens
			if u.InputTokens > 0 {
				d.usage.Input = u.InputTokens
			}
			if u.CacheReadInputTokens > 0 {
				d.usage.CacheRead = u.CacheReadInputTokens
			}
			if u.CacheCreationInputTokens > 0 {
				d.usage.CacheWrite = u.CacheCreationInputTokens
			}
		}
		return nil, nil
	case "message_stop":
		d.finished = true
		return []Event{{Kind: EvFinish, Stop: d.stop, StopSequence: d.stopSeq, Usage: d.usage}}, nil
	case "ping":
		return []Event{{Kind: EvPing}}, nil
	case "error":
		d.failed = true
		e := Error{Status: 500, Type: "api_error"}
		if ev.Error != nil {
			e.Type, e.Message = ev.Error.Type, ev.Error.Message
			if s, ok := statusByType[e.Type]; ok {
				e.Status = s
			}
		}
		return []Event{{Kind: EvError, Err: &e}}, nil
	}
	return nil, nil // unknown event types are ignored (the API's versioning rule)
}

func (d *anthropicStreamDecoder) blockStart(ev anStreamEvent) ([]Event, error) {
	if ev.Index == nil || ev.ContentBlock == nil {
		return nil, fieldErr("stream.content_block_start", "missing index or content_block")
	}
	b := ev.ContentBlock
	if d.open == nil {
		d.open = map[int]int{}
	}
	i := d.next
	var p Part
	var first []Event
	switch b.Type {
	case "text":
		p.Kind = KindText
		if b.Text != "" {
			first = append(first, Event{Kind: EvDelta, Index: i, Part: Part{Kind: KindText, Text: b.Text}})
		}
	case "tool_use":
		p = Part{Kind: KindToolCall, CallID: OriginalToolID(b.ID), Name: b.Name}
		if in := string(b.Input); in != "" && in != "{}" {
			first = append(first, Event{Kind: EvDelta, Index: i, Part: Part{Kind: KindToolCall, Args: in}})
		}
	case "thinking":
		p.Kind = KindReasoning
		if b.Thinking != nil && *b.Thinking != "" {
			first = append(first, Event{Kind: EvDelta, Index: i, Part: Part{Kind: KindReasoning, Text: *b.Thinking}})
		}
	case "redacted_thinking":
		p = Part{Kind: KindReasoning, Redacted: b.Data}
	default:
		return nil, fieldErr("stream.content_block_start.content_block.type", "%q is not translatable", b.Type)
	}
	d.open[*ev.Index] = i
	d.next++
	return append([]Event{{Kind: EvPartStart, Index: i, Part: p}}, first...), nil
}

func (d *anthropicStreamDecoder) blockDelta(ev anStreamEvent) ([]Event, error) {
	if ev.Index == nil {
		return nil, fieldErr("stream.content_block_delta.index", "missing")
	}
	if text, ok := plainTextDelta(ev.Delta); ok {
		return d.blockText(*ev.Index, text)
	}
	i, ok := d.open[*ev.Index]
	if !ok {
		return nil, fieldErr("stream.content_block_delta.index", "block %d is not open", *ev.Index)
	}
	var dl anDelta
	if err := json.Unmarshal(ev.Delta, &dl); err != nil {
		return nil, fieldErr("stream.content_block_delta.delta", "not JSON: %v", err)
	}
	var p Part
	switch dl.Type {
	case "text_delta":
		p = Part{Kind: KindText, Text: dl.Text}
	case "input_json_delta":
		p = Part{Kind: KindToolCall, Args: dl.PartialJSON}
	case "thinking_delta":
		p = Part{Kind: KindReasoning, Text: dl.Thinking}
	case "signature_delta":
		p = Part{Kind: KindReasoning, Signature: dl.Signature}
	default:
		return nil, nil // citations_delta and future kinds carry nothing we translate
	}
	return []Event{{Kind: EvDelta, Index: i, Part: p}}, nil
}

// blockText is the text delta of upstream block idx.
func (d *anthropicStreamDecoder) blockText(idx int, text string) ([]Event, error) {
	i, ok := d.open[idx]
	if !ok {
		return nil, fieldErr("stream.content_block_delta.index", "block %d is not open", idx)
	}
	d.one[0] = Event{Kind: EvDelta, Index: i, Part: Part{Kind: KindText, Text: text}}
	return d.one[:1:1], nil // valid until the next Decode (StreamDecoder)
}

// plainTextDelta is the text of the usual delta, exactly
// {"type":"text_delta","text":"…"} with a plainString text, read without
// a second json.Unmarshal of what the event's decode already validated
// (it is most events of a stream); any other form is left to json.Unmarshal (FuzzTextDelta).
func plainTextDelta(raw []byte) (string, bool) {
	const head = `{"type":"text_delta","text":`
	if len(raw) < len(head)+3 || string(raw[:len(head)]) != head || raw[len(raw)-1] != '}' {
		return "", false
	}
	return plainString(raw[len(head) : len(raw)-1])
}

func (d *anthropicStreamDecoder) End() ([]Event, error) {
	if !d.finished && !d.failed {
		return nil, fieldErr("stream", "ended before message_stop")
	}
	return nil, nil
}

// anthropicStreamEncoder writes a Messages stream. Responses' encrypted
// reasoning has no Anthropic slot and is dropped.
type anthropicStreamEncoder struct {
	model string
}

func (e *anthropicStreamEncoder) Encode(ev Event) ([]byte, error) {
	switch ev.Kind {
	case EvStart:
		e.model = startModel(ev, e.model)
		id := ev.ID
		if id == "" {
			id = newID("msg_")
		}
		m := anResponse{ID: id, Type: "message", Role: "assistant", Model: e.model, Content: []anBlock{}, Usage: anUsageOf(ev.Usage)}
		return sse("message_start", mustJSON(map[string]any{"type": "message_start", "message": m})), nil
	case EvPartStart:
		var b any
		switch p := ev.Part; {
		case p.Kind == KindText:
			b = map[string]string{"type": "text", "text": ""}
		case p.Kind == KindToolCall:
			id := AnthropicToolID(p.CallID) // POOL-25
			if id == "" {
				id = newID("toolu_")
			}
			b = map[string]any{"type": "tool_use", "id": id, "name": p.Name, "input": map[string]any{}}
		case p.Kind == KindReasoning && p.Redacted != "":
			b = map[string]string{"type": "redacted_thinking", "data": p.Redacted}
		case p.Kind == KindReasoning:
			b = map[string]string{"type": "thinking", "thinking": "", "signature": ""}
		default:
			return nil, fieldErr("stream.part", "%s part has no streamed Anthropic form", p.Kind)
		}
		return sse("content_block_start", mustJSON(map[string]any{"type": "content_block_start", "index": ev.Index, "content_block": b})), nil
	case EvDelta:
		b, _ := e.appendDelta(nil, ev)
		return b, nil
	case EvPartStop:
		return sse("content_block_stop", mustJSON(map[string]any{"type": "content_block_stop", "index": ev.Index})), nil
	case EvFinish:
		delta := map[string]any{"stop_reason": anStopOf(ev.Stop), "stop_sequence": nil}
		if ev.StopSequence != "" {
			delta["stop_sequence"] = ev.StopSequence
		}
		out := sse("message_delta", mustJSON(map[string]any{"type": "message_delta", "delta": delta, "usage": anUsageOf(ev.Usage)}))
		return append(out, sse("message_stop", []byte(`{"type":"message_stop"}`))...), nil
	case EvPing:
		return sse("ping", []byte(`{"type":"ping"}`)), nil
	case EvError:
		return AnthropicErrorEvent(*ev.Err), nil
	}
	return nil, nil
}

// appendDelta appends the content_block_delta event of ev to dst; ok is
// false (dst unchanged) for a delta with nothing to send.
func (e *anthropicStreamEncoder) appendDelta(dst []byte, ev Event) (b []byte, ok bool) {
	var typ, field, val string
	p := ev.Part
	switch {
	case p.Kind == KindText && p.Text != "":
		typ, field, val = "text_delta", "text", p.Text
	case p.Kind == KindToolCall && p.Args != "":
		typ, field, val = "input_json_delta", "partial_json", p.Args
	case p.Kind == KindReasoning && p.Text != "":
		typ, field, val = "thinking_delta", "thinking", p.Text
	case p.Kind == KindReasoning && p.Signature != "":
		typ, field, val = "signature_delta", "signature", p.Signature
	default:
		return dst, false
	}
	// Written by hand, not json.Marshal of a map: this is the per-event
	// path of every translated stream. Fields in the API's own
	// order (type, index, delta).
	b = slices.Grow(dst, 112+len(val)+len(val)/8)
	b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	b = strconv.AppendInt(b, int64(ev.Index), 10)
	b = append(b, `,"delta":{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","`...)
	b = append(b, field...)
	b = append(b, `":`...)
	b = appendJSONString(b, val)
	return append(b, "}}\n\n"...), true
}

// AnthropicErrorEvent renders e as a Messages stream's error event.
func AnthropicErrorEvent(e Error) []byte {
	return sse("error", anErrorBody(e))
}
