package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

func (Flavour) NewWatcher() neutral.StreamWatcher { return &responsesWatcher{seq: -1} }

// responsesWatcher finds the commit point of a Responses stream (docs/POOL.md):
// the first non-empty "*.delta" event, a tool call item
// ("response.output_item.added" of a "*_call" item), or a "*.done" event that
// carries text (servers that send no deltas). response.created,
// response.in_progress, empty message items and content parts are preamble;
// response.completed / response.incomplete end it; "error" and
// response.failed are errors. After the commit point an upstream "error"
// event is forwarded and the stream read on, since its response.failed
// follows.
type responsesWatcher struct {
	u         neutral.Accounting
	seq       int64 // highest sequence_number seen, -1 before any
	id, model string
	createdAt int64
	sawError  bool     // an upstream "error" event was forwarded
	keys      []string // state produced by this stream
}

// StateKeys lists the response id and encrypted reasoning this stream
// produced, so the next call that names them goes to this member.
func (w *responsesWatcher) StateKeys() []string { return w.keys }

func (w *responsesWatcher) Usage() neutral.Accounting { return w.u }

func (w *responsesWatcher) Observe(ev *wirefmt.SSEEvent, committed bool) neutral.Observation {
	if ev.Comment {
		return neutral.Observation{Verdict: neutral.VPreamble}
	}
	var v struct {
		Type     string          `json:"type"`
		Seq      *int64          `json:"sequence_number"`
		Delta    json.RawMessage `json:"delta"`
		Text     string          `json:"text"`
		Args     string          `json:"arguments"`
		Item     *responseItem   `json:"item"`
		Response *responseObject `json:"response"`
		// "error" event: code/message at the top, or nested in "error".
		Code    json.RawMessage   `json:"code"`
		Message string            `json:"message"`
		Error   *chat.OpenaiError `json:"error"`
	}
	if json.Unmarshal(ev.Data, &v) != nil {
		return neutral.Observation{Verdict: neutral.VPreamble}
	}
	name := ev.Name
	if name == "" {
		name = v.Type
	}
	if v.Seq != nil && *v.Seq > w.seq {
		w.seq = *v.Seq
	}
	if v.Item != nil && v.Item.Type == "reasoning" && v.Item.Encrypted != "" {
		w.keys = append(w.keys, encKey(v.Item.Encrypted))
	}
	if r := v.Response; r != nil {
		w.keys = append(w.keys, stateKeys(r)...)
		if r.ID != "" {
			w.id, w.model, w.createdAt = r.ID, r.Model, r.CreatedAt
		}
		if r.Usage != nil {
			w.u = r.Usage.toUsage()
		}
	}
	switch {
	case name == "response.completed" || name == "response.incomplete" || name == "response.done":
		return neutral.Observation{Verdict: neutral.VEnd}
	case name == "response.failed":
		e := chat.OpenaiError{Message: "response failed"}
		if v.Response != nil && v.Response.Error != nil {
			e = *v.Response.Error
		}
		typ, n := e.TypeAndCode()
		return neutral.Observation{Verdict: neutral.VError, ErrStatus: chat.OpenaiStatus(typ, n), ErrType: typ, ErrMsg: e.Message}
	case name == "error":
		e := chat.OpenaiError{Message: v.Message, Type: v.Type, Code: v.Code}
		if v.Error != nil {
			e = *v.Error
		}
		if e.Type == "error" {
			e.Type = ""
		}
		if committed {
			w.sawError = true
			return neutral.Observation{Verdict: neutral.VPreamble}
		}
		typ, n := e.TypeAndCode()
		return neutral.Observation{Verdict: neutral.VError, ErrStatus: chat.OpenaiStatus(typ, n), ErrType: typ, ErrMsg: e.Message}
	case committed:
		return neutral.Observation{Verdict: neutral.VPreamble}
	case strings.HasSuffix(name, ".delta"):
		if wirefmt.NonEmptyJSON(v.Delta) && string(bytes.TrimSpace(v.Delta)) != `""` {
			return neutral.Observation{Verdict: neutral.VVisible}
		}
	case strings.HasSuffix(name, ".done"):
		if v.Text != "" || v.Args != "" || (v.Item != nil && v.Item.visible()) {
			return neutral.Observation{Verdict: neutral.VVisible}
		}
	case name == "response.output_item.added":
		if v.Item != nil && strings.HasSuffix(v.Item.Type, "_call") {
			return neutral.Observation{Verdict: neutral.VVisible}
		}
	}
	return neutral.Observation{Verdict: neutral.VPreamble}
}

// ErrorEvent ends a committed stream the way the Responses API does: an
// "error" event (unless the upstream already sent one), then
// "response.failed" for the same response id, with sequence numbers
// continuing the stream's, so a client sees a failed response, not a cut.
func (w *responsesWatcher) ErrorEvent(status int, msg string) []byte {
	_, code := chat.OpenaiErrorType(status)
	var b bytes.Buffer
	next := func() int64 { w.seq++; return w.seq }
	if !w.sawError {
		d, _ := json.Marshal(map[string]any{"type": "error", "code": code, "message": msg, "param": nil, "sequence_number": next()})
		fmt.Fprintf(&b, "event: error\ndata: %s\n\n", d)
	}
	id := w.id
	if id == "" {
		id = "resp_pool_failed"
	}
	d, _ := json.Marshal(map[string]any{"type": "response.failed", "sequence_number": next(), "response": map[string]any{
		"id": id, "object": "response", "created_at": w.createdAt, "status": "failed", "model": w.model,
		"output": []any{}, "error": map[string]any{"code": code, "message": msg}}})
	fmt.Fprintf(&b, "event: response.failed\ndata: %s\n\n", d)
	return b.Bytes()
}
