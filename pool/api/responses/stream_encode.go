package responses

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
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
	Seq     int
	// the open item
	Item      rsItem
	ItemIndex int
	Text      strings.Builder
	summary   bool // a reasoning item's summary part was opened
	Kind      neutral.Kind
	output    []rsItem
}

// newResponsesStreamEncoder returns an encoder of one Responses stream
// naming model; custom names the request's freeform tools.
func newResponsesStreamEncoder(model string, custom []string) *responsesStreamEncoder {
	return &responsesStreamEncoder{model: model, custom: custom}
}

// event renders one Responses event of type typ with fields, numbering it.
func (e *responsesStreamEncoder) event(typ string, fields map[string]any) []byte {
	fields["type"] = typ
	fields["sequence_number"] = e.Seq
	e.Seq++
	return wirefmt.SSE(typ, wirefmt.MustJSON(fields))
}

func (e *responsesStreamEncoder) response(status string, u *neutral.Usage, stop neutral.StopReason) rsResponse {
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

func (e *responsesStreamEncoder) Encode(ev neutral.Event) ([]byte, error) {
	switch ev.Kind {
	case neutral.EvStart:
		e.id, e.created = ev.ID, chat.Now().Unix()
		e.model = neutral.StartModel(ev, e.model)
		if !strings.HasPrefix(e.id, "resp_") {
			e.id = neutral.NewID("resp_")
		}
		out := e.event("response.created", map[string]any{"response": e.response("in_progress", nil, "")})
		return append(out, e.event("response.in_progress", map[string]any{"response": e.response("in_progress", nil, "")})...), nil
	case neutral.EvPartStart:
		return e.start(ev.Part), nil
	case neutral.EvDelta:
		return e.Delta(ev.Part), nil
	case neutral.EvPartStop:
		return e.stop(), nil
	case neutral.EvFinish:
		r := e.response("completed", &ev.Usage, ev.Stop)
		typ := "response.completed"
		if r.Status == "incomplete" {
			typ = "response.incomplete"
		}
		return e.event(typ, map[string]any{"response": r}), nil
	case neutral.EvPing:
		return []byte(": ping\n\n"), nil
	case neutral.EvError:
		return e.ErrorEvents(*ev.Err), nil
	}
	return nil, nil
}

func (e *responsesStreamEncoder) start(p neutral.Part) []byte {
	e.ItemIndex, e.Kind, e.summary = len(e.output), p.Kind, false
	e.Text.Reset()
	e.Item = rsOutputItem(p, "in_progress")
	added := e.Item
	var out []byte
	switch p.Kind {
	case neutral.KindText:
		added.Content = json.RawMessage("[]")
		out = e.event("response.output_item.added", map[string]any{"output_index": e.ItemIndex, "item": added})
		out = append(out, e.event("response.content_part.added", map[string]any{"item_id": e.Item.ID, "output_index": e.ItemIndex,
			"content_index": 0, "part": rsOutPart{Type: "output_text", Annotations: &[]any{}}})...)
	case neutral.KindToolCall:
		if wirefmt.Contains(e.custom, p.Name) {
			// The input is the "input" argument, known only when the
			// arguments are complete: it is sent at the end of the item.
			e.Item, e.Kind = rsCustomCall(p, "in_progress"), kindCustomCall
			return e.event("response.output_item.added", map[string]any{"output_index": e.ItemIndex, "item": e.Item})
		}
		empty := ""
		added.Arguments = &empty
		out = e.event("response.output_item.added", map[string]any{"output_index": e.ItemIndex, "item": added})
	case neutral.KindReasoning:
		added.Summary, added.EncryptedContent = &[]rsContent{}, ""
		out = e.event("response.output_item.added", map[string]any{"output_index": e.ItemIndex, "item": added})
	}
	return out
}

// AppendDelta appends the response.output_text.delta event of a text delta
// to dst, byte for byte what delta writes for it (json.Marshal of the map:
// keys sorted), without the map and the reflection; ok is false
// (dst unchanged) for any other event.
func (e *responsesStreamEncoder) AppendDelta(dst []byte, ev neutral.Event) ([]byte, bool) {
	p := ev.Part
	if ev.Kind != neutral.EvDelta || e.Kind != neutral.KindText || p.Text == "" {
		return dst, false
	}
	e.Text.WriteString(p.Text)
	b := slices.Grow(dst, 200+len(e.Item.ID)+len(p.Text)+len(p.Text)/8)
	b = append(b, "event: response.output_text.delta\ndata: {\"content_index\":0,\"delta\":"...)
	b = wirefmt.AppendJSONString(b, p.Text)
	b = append(b, `,"item_id":`...)
	b = wirefmt.AppendJSONString(b, e.Item.ID)
	b = append(b, `,"logprobs":[],"output_index":`...)
	b = strconv.AppendInt(b, int64(e.ItemIndex), 10)
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, int64(e.Seq), 10)
	e.Seq++
	return append(b, `,"type":"response.output_text.delta"}`+"\n\n"...), true
}

func (e *responsesStreamEncoder) Delta(p neutral.Part) []byte {
	base := func() map[string]any { return map[string]any{"item_id": e.Item.ID, "output_index": e.ItemIndex} }
	switch {
	case e.Kind == neutral.KindText && p.Text != "":
		e.Text.WriteString(p.Text)
		f := base()
		f["content_index"], f["delta"], f["logprobs"] = 0, p.Text, []any{}
		return e.event("response.output_text.delta", f)
	case e.Kind == kindCustomCall:
		e.Text.WriteString(p.Args)
	case e.Kind == neutral.KindToolCall && p.Args != "":
		e.Text.WriteString(p.Args)
		f := base()
		f["delta"] = p.Args
		return e.event("response.function_call_arguments.delta", f)
	case e.Kind == neutral.KindReasoning && p.Encrypted != "":
		e.Item.EncryptedContent = p.Encrypted
	case e.Kind == neutral.KindReasoning && p.Text != "":
		var out []byte
		if !e.summary {
			e.summary = true
			f := base()
			f["summary_index"], f["part"] = 0, rsOutPart{Type: "summary_text"}
			out = e.event("response.reasoning_summary_part.added", f)
		}
		e.Text.WriteString(p.Text)
		f := base()
		f["summary_index"], f["delta"] = 0, p.Text
		return append(out, e.event("response.reasoning_summary_text.delta", f)...)
	}
	return nil
}

func (e *responsesStreamEncoder) stop() []byte {
	text := e.Text.String()
	f := func() map[string]any { return map[string]any{"item_id": e.Item.ID, "output_index": e.ItemIndex} }
	var out []byte
	switch e.Kind {
	case neutral.KindText:
		c := rsOutPart{Type: "output_text", Text: text, Annotations: &[]any{}}
		e.Item.Content = wirefmt.MustJSON([]rsOutPart{c})
		d := f()
		d["content_index"], d["text"], d["logprobs"] = 0, text, []any{}
		out = e.event("response.output_text.done", d)
		d = f()
		d["content_index"], d["part"] = 0, c
		out = append(out, e.event("response.content_part.done", d)...)
	case neutral.KindToolCall:
		args := neutral.ArgsOrEmpty(text)
		e.Item.Arguments = &args
		d := f()
		d["arguments"] = args
		out = e.event("response.function_call_arguments.done", d)
	case kindCustomCall:
		e.Item.Input = customInput(text)
		d := f()
		d["delta"] = e.Item.Input
		out = e.event("response.custom_tool_call_input.delta", d)
		d = f()
		d["input"] = e.Item.Input
		out = append(out, e.event("response.custom_tool_call_input.done", d)...)
	case neutral.KindReasoning:
		if e.summary {
			e.Item.Summary = &[]rsContent{{Type: "summary_text", Text: text}}
			d := f()
			d["summary_index"], d["text"] = 0, text
			out = e.event("response.reasoning_summary_text.done", d)
			d = f()
			d["summary_index"], d["part"] = 0, (*e.Item.Summary)[0]
			out = append(out, e.event("response.reasoning_summary_part.done", d)...)
		}
	}
	if e.Item.Type != "reasoning" {
		e.Item.Status = "completed"
	}
	e.output = append(e.output, e.Item)
	return append(out, e.event("response.output_item.done", map[string]any{"output_index": e.ItemIndex, "item": e.Item})...)
}

// ErrorEvents renders an in-stream failure: an "error" event then
// "response.failed" with the same code and message (what the OpenAI SDKs
// and Codex read).
func (e *responsesStreamEncoder) ErrorEvents(er neutral.Error) []byte {
	code := er.Type
	if code == "" {
		code = openAIErrorCode(er.StatusOrDefault())
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
const kindCustomCall neutral.Kind = 100

// rsOutPart is an output text or summary part; unlike rsContent its text is
// always present (the SDKs require it, even when empty).
type rsOutPart struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations *[]any `json:"annotations,omitempty"`
}
