package anthropic

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
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
	stop     neutral.StopReason
	stopSeq  string
	usage    neutral.Usage
	one      [1]neutral.Event // blockText's result, reused per event, not allocated
}

func (d *anthropicStreamDecoder) Decode(name string, data []byte) ([]neutral.Event, error) {
	if idx, text, ok := plainBlockText(data); ok {
		return d.blockText(idx, text) // the usual text delta, without json.Unmarshal
	}
	var ev anStreamEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, neutral.FieldErr("stream."+name, "not JSON: %v", err)
	}
	if ev.Type == "" {
		ev.Type = name
	}
	switch ev.Type {
	case "message_start":
		out := neutral.Event{Kind: neutral.EvStart}
		if m := ev.Message; m != nil {
			out.ID, out.Model, out.Usage = m.ID, m.Model, m.Usage.neutral()
			d.usage = out.Usage
		}
		return []neutral.Event{out}, nil
	case "content_block_start":
		return d.blockStart(ev)
	case "content_block_delta":
		return d.blockDelta(ev)
	case "content_block_stop":
		if ev.Index == nil {
			return nil, neutral.FieldErr("stream.content_block_stop.index", "missing")
		}
		i, ok := d.open[*ev.Index]
		if !ok {
			return nil, neutral.FieldErr("stream.content_block_stop.index", "block %d is not open", *ev.Index)
		}
		delete(d.open, *ev.Index)
		return []neutral.Event{{Kind: neutral.EvPartStop, Index: i}}, nil
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
		return []neutral.Event{{Kind: neutral.EvFinish, Stop: d.stop, StopSequence: d.stopSeq, Usage: d.usage}}, nil
	case "ping":
		return []neutral.Event{{Kind: neutral.EvPing}}, nil
	case "error":
		d.failed = true
		e := neutral.Error{Status: 500, Type: "api_error"}
		if ev.Error != nil {
			e.Type, e.Message = ev.Error.Type, ev.Error.Message
			if s, ok := neutral.StatusByType[e.Type]; ok {
				e.Status = s
			}
		}
		return []neutral.Event{{Kind: neutral.EvError, Err: &e}}, nil
	}
	return nil, nil // unknown event types are ignored (the API's versioning rule)
}

func (d *anthropicStreamDecoder) blockStart(ev anStreamEvent) ([]neutral.Event, error) {
	if ev.Index == nil || ev.ContentBlock == nil {
		return nil, neutral.FieldErr("stream.content_block_start", "missing index or content_block")
	}
	b := ev.ContentBlock
	if d.open == nil {
		d.open = map[int]int{}
	}
	i := d.next
	var p neutral.Part
	var first []neutral.Event
	switch b.Type {
	case "text":
		p.Kind = neutral.KindText
		if b.Text != "" {
			first = append(first, neutral.Event{Kind: neutral.EvDelta, Index: i, Part: neutral.Part{Kind: neutral.KindText, Text: b.Text}})
		}
	case "tool_use":
		p = neutral.Part{Kind: neutral.KindToolCall, CallID: originalToolID(b.ID), Name: b.Name}
		if in := string(b.Input); in != "" && in != "{}" {
			first = append(first, neutral.Event{Kind: neutral.EvDelta, Index: i, Part: neutral.Part{Kind: neutral.KindToolCall, Args: in}})
		}
	case "thinking":
		p.Kind = neutral.KindReasoning
		if b.Thinking != nil && *b.Thinking != "" {
			first = append(first, neutral.Event{Kind: neutral.EvDelta, Index: i, Part: neutral.Part{Kind: neutral.KindReasoning, Text: *b.Thinking}})
		}
	case "redacted_thinking":
		p = neutral.Part{Kind: neutral.KindReasoning, Redacted: b.Data}
	default:
		return nil, neutral.FieldErr("stream.content_block_start.content_block.type", "%q is not translatable", b.Type)
	}
	d.open[*ev.Index] = i
	d.next++
	return append([]neutral.Event{{Kind: neutral.EvPartStart, Index: i, Part: p}}, first...), nil
}

func (d *anthropicStreamDecoder) blockDelta(ev anStreamEvent) ([]neutral.Event, error) {
	if ev.Index == nil {
		return nil, neutral.FieldErr("stream.content_block_delta.index", "missing")
	}
	if text, ok := plainTextDelta(ev.Delta); ok {
		return d.blockText(*ev.Index, text)
	}
	i, ok := d.open[*ev.Index]
	if !ok {
		return nil, neutral.FieldErr("stream.content_block_delta.index", "block %d is not open", *ev.Index)
	}
	var dl anDelta
	if err := json.Unmarshal(ev.Delta, &dl); err != nil {
		return nil, neutral.FieldErr("stream.content_block_delta.delta", "not JSON: %v", err)
	}
	var p neutral.Part
	switch dl.Type {
	case "text_delta":
		p = neutral.Part{Kind: neutral.KindText, Text: dl.Text}
	case "input_json_delta":
		p = neutral.Part{Kind: neutral.KindToolCall, Args: dl.PartialJSON}
	case "thinking_delta":
		p = neutral.Part{Kind: neutral.KindReasoning, Text: dl.Thinking}
	case "signature_delta":
		p = neutral.Part{Kind: neutral.KindReasoning, Signature: dl.Signature}
	default:
		return nil, nil // citations_delta and future kinds carry nothing we translate
	}
	return []neutral.Event{{Kind: neutral.EvDelta, Index: i, Part: p}}, nil
}

// blockText is the text delta of upstream block idx.
func (d *anthropicStreamDecoder) blockText(idx int, text string) ([]neutral.Event, error) {
	i, ok := d.open[idx]
	if !ok {
		return nil, neutral.FieldErr("stream.content_block_delta.index", "block %d is not open", idx)
	}
	d.one[0] = neutral.Event{Kind: neutral.EvDelta, Index: i, Part: neutral.Part{Kind: neutral.KindText, Text: text}}
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
	return wirefmt.PlainString(raw[len(head) : len(raw)-1])
}

func (d *anthropicStreamDecoder) End() ([]neutral.Event, error) {
	if !d.finished && !d.failed {
		return nil, neutral.FieldErr("stream", "ended before message_stop")
	}
	return nil, nil
}

// anthropicStreamEncoder writes a Messages stream. Responses' encrypted
// reasoning has no Anthropic slot and is dropped.
type anthropicStreamEncoder struct {
	Model string
}

func (e *anthropicStreamEncoder) Encode(ev neutral.Event) ([]byte, error) {
	switch ev.Kind {
	case neutral.EvStart:
		e.Model = neutral.StartModel(ev, e.Model)
		id := ev.ID
		if id == "" {
			id = neutral.NewID("msg_")
		}
		m := anResponse{ID: id, Type: "message", Role: "assistant", Model: e.Model, Content: []anBlock{}, Usage: anUsageOf(ev.Usage)}
		return wirefmt.SSE("message_start", wirefmt.MustJSON(map[string]any{"type": "message_start", "message": m})), nil
	case neutral.EvPartStart:
		var b any
		switch p := ev.Part; {
		case p.Kind == neutral.KindText:
			b = map[string]string{"type": "text", "text": ""}
		case p.Kind == neutral.KindToolCall:
			id := anthropicToolID(p.CallID) // Anthropic refuses ids outside its alphabet
			if id == "" {
				id = neutral.NewID("toolu_")
			}
			b = map[string]any{"type": "tool_use", "id": id, "name": p.Name, "input": map[string]any{}}
		case p.Kind == neutral.KindReasoning && p.Redacted != "":
			b = map[string]string{"type": "redacted_thinking", "data": p.Redacted}
		case p.Kind == neutral.KindReasoning:
			b = map[string]string{"type": "thinking", "thinking": "", "signature": ""}
		default:
			return nil, neutral.FieldErr("stream.part", "%s part has no streamed Anthropic form", p.Kind)
		}
		return wirefmt.SSE("content_block_start", wirefmt.MustJSON(map[string]any{"type": "content_block_start", "index": ev.Index, "content_block": b})), nil
	case neutral.EvDelta:
		b, _ := e.AppendDelta(nil, ev)
		return b, nil
	case neutral.EvPartStop:
		return wirefmt.SSE("content_block_stop", wirefmt.MustJSON(map[string]any{"type": "content_block_stop", "index": ev.Index})), nil
	case neutral.EvFinish:
		delta := map[string]any{"stop_reason": anStopOf(ev.Stop), "stop_sequence": nil}
		if ev.StopSequence != "" {
			delta["stop_sequence"] = ev.StopSequence
		}
		out := wirefmt.SSE("message_delta", wirefmt.MustJSON(map[string]any{"type": "message_delta", "delta": delta, "usage": anUsageOf(ev.Usage)}))
		return append(out, wirefmt.SSE("message_stop", []byte(`{"type":"message_stop"}`))...), nil
	case neutral.EvPing:
		return wirefmt.SSE("ping", []byte(`{"type":"ping"}`)), nil
	case neutral.EvError:
		return anthropicErrorEvent(*ev.Err), nil
	}
	return nil, nil
}

// AppendDelta appends the content_block_delta event of ev to dst; ok is
// false (dst unchanged) for a delta with nothing to send.
func (e *anthropicStreamEncoder) AppendDelta(dst []byte, ev neutral.Event) (b []byte, ok bool) {
	var typ, field, val string
	p := ev.Part
	switch {
	case p.Kind == neutral.KindText && p.Text != "":
		typ, field, val = "text_delta", "text", p.Text
	case p.Kind == neutral.KindToolCall && p.Args != "":
		typ, field, val = "input_json_delta", "partial_json", p.Args
	case p.Kind == neutral.KindReasoning && p.Text != "":
		typ, field, val = "thinking_delta", "thinking", p.Text
	case p.Kind == neutral.KindReasoning && p.Signature != "":
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
	b = wirefmt.AppendJSONString(b, val)
	return append(b, "}}\n\n"...), true
}

// anthropicErrorEvent renders e as a Messages stream's error event.
func anthropicErrorEvent(e neutral.Error) []byte {
	return wirefmt.SSE("error", anErrorBody(e))
}
