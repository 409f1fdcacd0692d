package translate

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// responsesStreamEncoder writes a Responses stream. Each neutral part is one
// output item: a text part a message item with one output_text content part,
// a tool call a function_call item, a reasoning part a reasoning item with
// one summary part. The "*.done" events repeat the item's full text, so the
// open item's text is kept; finished items are kept for response.completed,
// which lists them (clients read the output from it). Anthropic signatures
// have no Responses slot and are dropped.
type responsesStreamEncoder struct {
	model   string
	custom  []string // freeform tool names: their calls are custom_tool_call items
	id      string
	created int64
	seq     int
	// the open item
	item      rsItem
	itemIndex int
	text      strings.Builder
	summary   bool // a reasoning item's summary part was opened
	kind      Kind
	output    []rsItem
}

func newResponsesStreamEncoder(model string, custom []string) *responsesStreamEncoder {
	return &responsesStreamEncoder{model: model, custom: custom}
}

// event renders one Responses event of type typ with fields, numbering it.
func (e *responsesStreamEncoder) event(typ string, fields map[string]any) []byte {
	fields["type"] = typ
	fields["sequence_number"] = e.seq
	e.seq++
	return sse(typ, mustJSON(fields))
}

func (e *responsesStreamEncoder) response(status string, u *Usage, stop StopReason) rsResponse {
	r := rsResponse{ID: e.id, Object: "response", CreatedAt: e.created, Status: status, Model: e.model, Output: e.output}
	if r.Output == nil {
		r.Output = []rsItem{}
	}
	if u != nil {
		r.Usage = rsUsageOf(*u)
		r.Status, r.IncompleteDetails = rsStatusOf(stop)
	}
	return r
}

func (e *responsesStreamEncoder) Encode(ev Event) ([]byte, error) {
	switch ev.Kind {
	case EvStart:
		e.id, e.created = ev.ID, now().Unix()
		e.model = startModel(ev, e.model)
		if !strings.HasPrefix(e.id, "resp_") {
			e.id = newID("resp_")
		}
		out := e.event("response.created", map[string]any{"response": e.response("in_progress", nil, "")})
		return append(out, e.event("response.in_progress", map[string]any{"response": e.response("in_progress", nil, "")})...), nil
	case EvPartStart:
		return e.start(ev.Part), nil
	case EvDelta:
		return e.delta(ev.Part), nil
	case EvPartStop:
		return e.stop(), nil
	case EvFinish:
		r := e.response("completed", &ev.Usage, ev.Stop)
		typ := "response.completed"
		if r.Status == "incomplete" {
			typ = "response.incomplete"
		}
		return e.event(typ, map[string]any{"response": r}), nil
	case EvPing:
		return []byte(": ping\n\n"), nil
	case EvError:
		return e.errorEvents(*ev.Err), nil
	}
	return nil, nil
}

func (e *responsesStreamEncoder) start(p Part) []byte {
	e.itemIndex, e.kind, e.summary = len(e.output), p.Kind, false
	e.text.Reset()
	e.item = rsOutputItem(p, "in_progress")
	added := e.item
	var out []byte
	switch p.Kind {
	case KindText:
		added.Content = json.RawMessage("[]")
		out = e.event("response.output_item.added", map[string]any{"output_index": e.itemIndex, "item": added})
		out = append(out, e.event("response.content_part.added", map[string]any{"item_id": e.item.ID, "output_index": e.itemIndex,
			"content_index": 0, "part": rsOutPart{Type: "output_text", Annotations: &[]any{}}})...)
	case KindToolCall:
		if contains(e.custom, p.Name) {
			// The input is the "input" argument, known only when the
			// arguments are complete: it is sent at the end of the item.
			e.item, e.kind = rsCustomCall(p, "in_progress"), kindCustomCall
			return e.event("response.output_item.added", map[string]any{"output_index": e.itemIndex, "item": e.item})
		}
		empty := ""
		added.Arguments = &empty
		out = e.event("response.output_item.added", map[string]any{"output_index": e.itemIndex, "item": added})
	case KindReasoning:
		added.Summary, added.EncryptedContent = &[]rsContent{}, ""
		out = e.event("response.output_item.added", map[string]any{"output_index": e.itemIndex, "item": added})
	}
	return out
}

// appendDelta appends the response.output_text.delta event of a text delta
// to dst, byte for byte what delta writes for it (json.Marshal of the map:
// keys sorted), without the map and the reflection; ok is false
// (dst unchanged) for any other event.
func (e *responsesStreamEncoder) appendDelta(dst []byte, ev Event) ([]byte, bool) {
	p := ev.Part
	if ev.Kind != EvDelta || e.kind != KindText || p.Text == "" {
		return dst, false
	}
	e.text.WriteString(p.Text)
	b := slices.Grow(dst, 200+len(e.item.ID)+len(p.Text)+len(p.Text)/8)
	b = append(b, "event: response.output_text.delta\ndata: {\"content_index\":0,\"delta\":"...)
	b = appendJSONString(b, p.Text)
	b = append(b, `,"item_id":`...)
	b = appendJSONString(b, e.item.ID)
	b = append(b, `,"logprobs":[],"output_index":`...)
	b = strconv.AppendInt(b, int64(e.itemIndex), 10)
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, int64(e.seq), 10)
	e.seq++
	return append(b, `,"type":"response.output_text.delta"}`+"\n\n"...), true
}

func (e *responsesStreamEncoder) delta(p Part) []byte {
	base := func() map[string]any { return map[string]any{"item_id": e.item.ID, "output_index": e.itemIndex} }
	switch {
	case e.kind == KindText && p.Text != "":
		e.text.WriteString(p.Text)
		f := base()
		f["content_index"], f["delta"], f["logprobs"] = 0, p.Text, []any{}
		return e.event("response.output_text.delta", f)
	case e.kind == kindCustomCall:
		e.text.WriteString(p.Args)
	case e.kind == KindToolCall && p.Args != "":
		e.text.WriteString(p.Args)
		f := base()
		f["delta"] = p.Args
		return e.event("response.function_call_arguments.delta", f)
	case e.kind == KindReasoning && p.Encrypted != "":
		e.item.EncryptedContent = p.Encrypted
	case e.kind == KindReasoning && p.Text != "":
		var out []byte
		if !e.summary {
			e.summary = true
			f := base()
			f["summary_index"], f["part"] = 0, rsOutPart{Type: "summary_text"}
			out = e.event("response.reasoning_summary_part.added", f)
		}
		e.text.WriteString(p.Text)
		f := base()
		f["summary_index"], f["delta"] = 0, p.Text
		return append(out, e.event("response.reasoning_summary_text.delta", f)...)
	}
	return nil
}

func (e *responsesStreamEncoder) stop() []byte {
	text := e.text.String()
	f := func() map[string]any { return map[string]any{"item_id": e.item.ID, "output_index": e.itemIndex} }
	var out []byte
	switch e.kind {
	case KindText:
		c := rsOutPart{Type: "output_text", Text: text, Annotations: &[]any{}}
		e.item.Content = mustJSON([]rsOutPart{c})
		d := f()
		d["content_index"], d["text"], d["logprobs"] = 0, text, []any{}
		out = e.event("response.output_text.done", d)
		d = f()
		d["content_index"], d["part"] = 0, c
		out = append(out, e.event("response.content_part.done", d)...)
	case KindToolCall:
		args := argsOrEmpty(text)
		e.item.Arguments = &args
		d := f()
		d["arguments"] = args
		out = e.event("response.function_call_arguments.done", d)
	case kindCustomCall:
		e.item.Input = customInput(text)
		d := f()
		d["delta"] = e.item.Input
		out = e.event("response.custom_tool_call_input.delta", d)
		d = f()
		d["input"] = e.item.Input
		out = append(out, e.event("response.custom_tool_call_input.done", d)...)
	case KindReasoning:
		if e.summary {
			e.item.Summary = &[]rsContent{{Type: "summary_text", Text: text}}
			d := f()
			d["summary_index"], d["text"] = 0, text
			out = e.event("response.reasoning_summary_text.done", d)
			d = f()
			d["summary_index"], d["part"] = 0, (*e.item.Summary)[0]
			out = append(out, e.event("response.reasoning_summary_part.done", d)...)
		}
	}
	if e.item.Type != "reasoning" {
		e.item.Status = "completed"
	}
	e.output = append(e.output, e.item)
	return append(out, e.event("response.output_item.done", map[string]any{"output_index": e.itemIndex, "item": e.item})...)
}

// errorEvents renders an in-stream failure: an "error" event then
// "response.failed" with the same code and message (what the OpenAI SDKs
// and Codex read).
func (e *responsesStreamEncoder) errorEvents(er Error) []byte {
	code := er.Type
	if code == "" {
		code = openAIErrorCode(er.statusOrDefault())
	}
	out := e.event("error", map[string]any{"code": code, "message": er.Message, "param": nil})
	r := e.response("failed", nil, "")
	r.Error = &struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{code, er.Message}
	return append(out, e.event("response.failed", map[string]any{"response": r})...)
}

// openAIErrorCode is the error code word for a status.
func openAIErrorCode(status int) string {
	switch {
	case status == 429:
		return "rate_limit_exceeded"
	case status == 401:
		return "invalid_api_key"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// kindCustomCall is the encoder's private kind for a custom tool call item.
const kindCustomCall Kind = 100

// rsOutPart is an output text or summary part; unlike rsContent its text is
// always present (the SDKs require it, even when empty).
type rsOutPart struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations *[]any `json:"annotations,omitempty"`
}
