package translate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Responses answer wire types.
type rsResponse struct {
	ID                string    `json:"id"`
	Object            string    `json:"object"`
	CreatedAt         int64     `json:"created_at"`
	Status            string    `json:"status"`
	Model             string    `json:"model"`
	Output            []rsItem  `json:"output"`
	Usage             *rsUsage  `json:"usage"`
	IncompleteDetails *struct { // set when Status is "incomplete"
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type rsUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

func (u *rsUsage) neutral() Usage {
	if u == nil {
		return Usage{}
	}
	c := u.InputTokensDetails.CachedTokens
	return Usage{Input: u.InputTokens - c, CacheRead: c, Output: u.OutputTokens, Reasoning: u.OutputTokensDetails.ReasoningTokens}
}

func rsUsageOf(u Usage) *rsUsage {
	in := u.Input + u.CacheRead + u.CacheWrite
	w := &rsUsage{InputTokens: in, OutputTokens: u.Output, TotalTokens: in + u.Output}
	w.InputTokensDetails.CachedTokens = u.CacheRead
	w.OutputTokensDetails.ReasoningTokens = u.Reasoning
	return w
}

// rsStop derives the stop reason from status, incomplete reason and whether
// the output holds a function call.
func rsStop(status, reason string, toolCall bool) StopReason {
	switch {
	case status == "incomplete" && reason == "content_filter":
		return StopFilter
	case status == "incomplete":
		return StopMaxTokens
	case toolCall:
		return StopToolUse
	}
	return StopEnd
}

// DecodeResponsesResponse reads a non-streamed Responses answer.
func DecodeResponsesResponse(body []byte) (*Response, error) {
	var w rsResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, wireErr("body", err)
	}
	r := &Response{ID: w.ID, Model: w.Model, Usage: w.Usage.neutral()}
	tool := false
	for i, it := range w.Output {
		switch it.Type {
		case "message":
			parts, err := decodeRsContent(fmt.Sprintf("output[%d].content", i), it.Content)
			if err != nil {
				return nil, err
			}
			r.Parts = append(r.Parts, parts...)
		case "function_call":
			tool = true
			args := ""
			if it.Arguments != nil {
				args = *it.Arguments
			}
			r.Parts = append(r.Parts, Part{Kind: KindToolCall, CallID: it.CallID, Name: it.Name, Args: argsOrEmpty(args)})
		case "reasoning":
			var text []string
			for _, s := range deref(it.Summary) {
				text = append(text, s.Text)
			}
			r.Parts = append(r.Parts, Part{Kind: KindReasoning, Text: strings.Join(text, "\n\n"), Encrypted: it.EncryptedContent, ItemID: it.ID})
		default:
			return nil, fieldErr(fmt.Sprintf("output[%d].type", i), "output item %q is not translatable", it.Type)
		}
	}
	reason := ""
	if w.IncompleteDetails != nil {
		reason = w.IncompleteDetails.Reason
	}
	r.Stop = rsStop(w.Status, reason, tool)
	return r, nil
}

// EncodeResponsesResponse writes r as a Responses answer naming model;
// calls of the custom tools are custom_tool_call items.
func EncodeResponsesResponse(r *Response, model string, custom ...string) ([]byte, error) {
	id := r.ID
	if id == "" || !strings.HasPrefix(id, "resp_") {
		id = newID("resp_")
	}
	w := rsResponse{ID: id, Object: "response", CreatedAt: now().Unix(), Status: "completed", Model: model,
		Output: []rsItem{}, Usage: rsUsageOf(r.Usage)}
	for _, p := range r.Parts {
		if p.Kind == KindToolCall && contains(custom, p.Name) {
			w.Output = append(w.Output, rsCustomCall(p, "completed"))
			continue
		}
		w.Output = append(w.Output, rsOutputItem(p, "completed"))
	}
	w.Status, w.IncompleteDetails = rsStatusOf(r.Stop)
	return mustJSON(w), nil
}

// rsStatusOf maps a stop reason onto Responses' status and incomplete reason.
func rsStatusOf(s StopReason) (string, *struct {
	Reason string `json:"reason"`
}) {
	switch s {
	case StopMaxTokens:
		return "incomplete", &struct {
			Reason string `json:"reason"`
		}{"max_output_tokens"}
	case StopFilter:
		return "incomplete", &struct {
			Reason string `json:"reason"`
		}{"content_filter"}
	}
	return "completed", nil
}

// rsOutputItem renders one complete answer part as an output item.
func rsOutputItem(p Part, status string) rsItem {
	switch p.Kind {
	case KindToolCall:
		id := p.CallID
		if id == "" {
			id = newID("call_")
		}
		args := argsOrEmpty(p.Args)
		return rsItem{Type: "function_call", ID: "fc_" + strings.TrimPrefix(id, "call_"), Status: status, CallID: id, Name: p.Name, Arguments: &args}
	case KindReasoning:
		id := p.ItemID
		if id == "" {
			id = newID("rs_")
		}
		it := rsItem{Type: "reasoning", ID: id, Summary: &[]rsContent{}, EncryptedContent: p.Encrypted}
		if p.Text != "" {
			it.Summary = &[]rsContent{{Type: "summary_text", Text: p.Text}}
		}
		return it
	}
	content := []rsOutPart{{Type: "output_text", Text: p.Text, Annotations: &[]any{}}}
	return rsItem{Type: "message", ID: newID("msg_"), Status: status, Role: "assistant", Content: mustJSON(content)}
}

// rsCustomCall renders a call of a freeform tool: the "input" argument of
// the function form it was offered in (customToolSchema) as the item's
// input; arguments without it are passed as their JSON text.
func rsCustomCall(p Part, status string) rsItem {
	it := rsOutputItem(p, status)
	it.Type, it.Arguments = "custom_tool_call", nil
	it.ID = "ctc_" + strings.TrimPrefix(it.ID, "fc_")
	it.Input = customInput(p.Args)
	return it
}

func customInput(args string) string {
	var a struct {
		Input *string `json:"input"`
	}
	if json.Unmarshal([]byte(argsOrEmpty(args)), &a) == nil && a.Input != nil {
		return *a.Input
	}
	return args
}

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
	curKind          Kind
	next             int
	summaries        int // summary parts seen in the open reasoning item
	tool             bool
}

func newResponsesStreamDecoder() *responsesStreamDecoder { return &responsesStreamDecoder{cur: -1} }

func (d *responsesStreamDecoder) open(p Part) []Event {
	out := d.close()
	d.cur, d.curKind = d.next, p.Kind
	d.next++
	return append(out, Event{Kind: EvPartStart, Index: d.cur, Part: p})
}

func (d *responsesStreamDecoder) close() []Event {
	if d.cur < 0 {
		return nil
	}
	i := d.cur
	d.cur = -1
	return []Event{{Kind: EvPartStop, Index: i}}
}

func (d *responsesStreamDecoder) delta(k Kind, p Part) []Event {
	var out []Event
	if d.cur < 0 || d.curKind != k {
		out = d.open(Part{Kind: k})
	}
	p.Kind = k
	return append(out, Event{Kind: EvDelta, Index: d.cur, Part: p})
}

func (d *responsesStreamDecoder) Decode(name string, data []byte) ([]Event, error) {
	var ev rsStreamEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, fieldErr("stream."+name, "not JSON: %v", err)
	}
	if ev.Type == "" {
		ev.Type = name
	}
	if d.failed {
		return nil, nil
	}
	switch ev.Type {
	case "response.created":
		st := Event{Kind: EvStart}
		if ev.Response != nil {
			st.ID, st.Model = ev.Response.ID, ev.Response.Model
		}
		return []Event{st}, nil
	case "response.output_item.added":
		return d.itemAdded(ev.Item), nil
	case "response.content_part.added":
		return d.open(Part{Kind: KindText}), nil
	case "response.output_text.delta", "response.refusal.delta":
		if ev.Delta == "" {
			return nil, nil
		}
		return d.delta(KindText, Part{Text: ev.Delta}), nil
	case "response.content_part.done":
		return d.close(), nil
	case "response.function_call_arguments.delta":
		if ev.Delta == "" || d.curKind != KindToolCall || d.cur < 0 {
			return nil, nil
		}
		return []Event{{Kind: EvDelta, Index: d.cur, Part: Part{Kind: KindToolCall, Args: ev.Delta}}}, nil
	case "response.reasoning_summary_part.added":
		d.summaries++
		if d.summaries > 1 && d.cur >= 0 {
			return d.delta(KindReasoning, Part{Text: "\n\n"}), nil
		}
		return nil, nil
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if ev.Delta == "" {
			return nil, nil
		}
		return d.delta(KindReasoning, Part{Text: ev.Delta}), nil
	case "response.output_item.done":
		var out []Event
		if ev.Item != nil && ev.Item.Type == "reasoning" && ev.Item.EncryptedContent != "" && d.cur >= 0 && d.curKind == KindReasoning {
			out = append(out, Event{Kind: EvDelta, Index: d.cur, Part: Part{Kind: KindReasoning, Encrypted: ev.Item.EncryptedContent}})
		}
		return append(out, d.close()...), nil
	case "response.completed", "response.incomplete":
		d.finished = true
		f := Event{Kind: EvFinish}
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
		e := Error{Type: ev.Code, Message: ev.Message}
		if r := ev.Response; r != nil && r.Error != nil {
			e.Type, e.Message = r.Error.Code, r.Error.Message
		}
		e.Status = 500
		if s, ok := statusByType[e.Type]; ok {
			e.Status = s
		}
		return []Event{{Kind: EvError, Err: &e}}, nil
	}
	return nil, nil
}

func (d *responsesStreamDecoder) itemAdded(it *rsItem) []Event {
	if it == nil {
		return nil
	}
	switch it.Type {
	case "function_call":
		d.tool = true
		out := d.open(Part{Kind: KindToolCall, CallID: it.CallID, Name: it.Name})
		if it.Arguments != nil && *it.Arguments != "" {
			out = append(out, Event{Kind: EvDelta, Index: d.cur, Part: Part{Kind: KindToolCall, Args: *it.Arguments}})
		}
		return out
	case "reasoning":
		d.summaries = 0
		return d.open(Part{Kind: KindReasoning, ItemID: it.ID})
	}
	return d.close()
}

func (d *responsesStreamDecoder) End() ([]Event, error) {
	if !d.finished && !d.failed {
		return nil, fieldErr("stream", "ended before response.completed")
	}
	return nil, nil
}
