package responses

import (
	"encoding/json"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
)

// Responses stream event wire type: the union of the event payloads.
type rsStreamEvent struct {
	Type     string      `json:"type"`
	Response *rsResponse `json:"response"`
	Item     *rsItem     `json:"item"`
	Delta    string      `json:"delta"`
	Code     string      `json:"code"`
	Message  string      `json:"message"`
}

// responsesStreamDecoder reads a Responses stream (docs/POOL.md, streams):
// response.created, output items with their content parts and deltas,
// response.completed / response.incomplete; error and response.failed.
// Each message content part, function call and reasoning item is one part.
type responsesStreamDecoder struct {
	finished, failed bool
	cur              int // open neutral part, -1 none
	curKind          neutral.Kind
	next             int
	summaries        int // summary parts seen in the open reasoning item
	tool             bool
}

// newResponsesStreamDecoder returns a decoder of one Responses stream.
func newResponsesStreamDecoder() *responsesStreamDecoder { return &responsesStreamDecoder{cur: -1} }

func (d *responsesStreamDecoder) open(p neutral.Part) []neutral.Event {
	out := d.close()
	d.cur, d.curKind = d.next, p.Kind
	d.next++
	return append(out, neutral.Event{Kind: neutral.EvPartStart, Index: d.cur, Part: p})
}

func (d *responsesStreamDecoder) close() []neutral.Event {
	if d.cur < 0 {
		return nil
	}
	i := d.cur
	d.cur = -1
	return []neutral.Event{{Kind: neutral.EvPartStop, Index: i}}
}

func (d *responsesStreamDecoder) Delta(k neutral.Kind, p neutral.Part) []neutral.Event {
	var out []neutral.Event
	if d.cur < 0 || d.curKind != k {
		out = d.open(neutral.Part{Kind: k})
	}
	p.Kind = k
	return append(out, neutral.Event{Kind: neutral.EvDelta, Index: d.cur, Part: p})
}

func (d *responsesStreamDecoder) Decode(name string, data []byte) ([]neutral.Event, error) {
	var ev rsStreamEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, neutral.FieldErr("stream."+name, "not JSON: %v", err)
	}
	if ev.Type == "" {
		ev.Type = name
	}
	if d.failed {
		return nil, nil
	}
	switch ev.Type {
	case "response.created":
		st := neutral.Event{Kind: neutral.EvStart}
		if ev.Response != nil {
			st.ID, st.Model = ev.Response.ID, ev.Response.Model
		}
		return []neutral.Event{st}, nil
	case "response.output_item.added":
		return d.itemAdded(ev.Item), nil
	case "response.content_part.added":
		return d.open(neutral.Part{Kind: neutral.KindText}), nil
	case "response.output_text.delta", "response.refusal.delta":
		if ev.Delta == "" {
			return nil, nil
		}
		return d.Delta(neutral.KindText, neutral.Part{Text: ev.Delta}), nil
	case "response.content_part.done":
		return d.close(), nil
	case "response.function_call_arguments.delta":
		if ev.Delta == "" || d.curKind != neutral.KindToolCall || d.cur < 0 {
			return nil, nil
		}
		return []neutral.Event{{Kind: neutral.EvDelta, Index: d.cur, Part: neutral.Part{Kind: neutral.KindToolCall, Args: ev.Delta}}}, nil
	case "response.reasoning_summary_part.added":
		d.summaries++
		if d.summaries > 1 && d.cur >= 0 {
			return d.Delta(neutral.KindReasoning, neutral.Part{Text: "\n\n"}), nil
		}
		return nil, nil
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if ev.Delta == "" {
			return nil, nil
		}
		return d.Delta(neutral.KindReasoning, neutral.Part{Text: ev.Delta}), nil
	case "response.output_item.done":
		var out []neutral.Event
		if ev.Item != nil && ev.Item.Type == "reasoning" && ev.Item.EncryptedContent != "" && d.cur >= 0 && d.curKind == neutral.KindReasoning {
			out = append(out, neutral.Event{Kind: neutral.EvDelta, Index: d.cur, Part: neutral.Part{Kind: neutral.KindReasoning, Encrypted: ev.Item.EncryptedContent}})
		}
		return append(out, d.close()...), nil
	case "response.completed", "response.incomplete":
		d.finished = true
		f := neutral.Event{Kind: neutral.EvFinish}
		if r := ev.Response; r != nil {
			reason := ""
			if r.IncompleteDetails != nil {
				reason = r.IncompleteDetails.Reason
			}
			f.Stop, f.Usage = rsStop(r.Status, reason, d.tool), r.Usage.neutral()
		}
		return append(d.close(), f), nil
	case "error", "response.failed":
		d.failed = true
		e := neutral.Error{Type: ev.Code, Message: ev.Message}
		if r := ev.Response; r != nil && r.Error != nil {
			e.Type, e.Message = r.Error.Code, r.Error.Message
		}
		e.Status = 500
		if s, ok := neutral.StatusByType[e.Type]; ok {
			e.Status = s
		}
		return []neutral.Event{{Kind: neutral.EvError, Err: &e}}, nil
	}
	return nil, nil
}

func (d *responsesStreamDecoder) itemAdded(it *rsItem) []neutral.Event {
	if it == nil {
		return nil
	}
	switch it.Type {
	case "function_call":
		d.tool = true
		out := d.open(neutral.Part{Kind: neutral.KindToolCall, CallID: it.CallID, Name: it.Name})
		if it.Arguments != nil && *it.Arguments != "" {
			out = append(out, neutral.Event{Kind: neutral.EvDelta, Index: d.cur, Part: neutral.Part{Kind: neutral.KindToolCall, Args: *it.Arguments}})
		}
		return out
	case "reasoning":
		d.summaries = 0
		return d.open(neutral.Part{Kind: neutral.KindReasoning, ItemID: it.ID})
	}
	return d.close()
}

func (d *responsesStreamDecoder) End() ([]neutral.Event, error) {
	if !d.finished && !d.failed {
		return nil, neutral.FieldErr("stream", "ended before response.completed")
	}
	return nil, nil
}
