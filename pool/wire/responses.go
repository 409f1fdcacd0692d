package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// ResponsesFlavour is the OpenAI Responses API (SPEC POOL-1, the only API
// Codex CLI speaks): POST /v1/responses, streamed or not. Error documents
// and pings are Chat Completions' (embedded); requests, the commit point and
// in-stream errors are its own.
type ResponsesFlavour struct{ ChatFlavour }

func (ResponsesFlavour) API() apikind.Kind { return apikind.Responses }

// responsesRequest is the part of a Responses request the pool reads.
type responsesRequest struct {
	Model           *string `json:"model"`
	Stream          bool    `json:"stream"`
	MaxOutputTokens int     `json:"max_output_tokens"`
	Instructions    rawView `json:"instructions"`
	Input           rawView `json:"input"`
	PromptCacheKey  string  `json:"prompt_cache_key"`
	Previous        string  `json:"previous_response_id"`
	Reasoning       struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
}

func (ResponsesFlavour) ParseRequest(ep Endpoint, body []byte) (*CallInfo, error) {
	var req responsesRequest
	if err := decodeRequest(body, &req); err != nil {
		return nil, errors.New("request body is not a valid JSON object of the Responses shape")
	}
	if req.Model == nil || *req.Model == "" {
		return nil, errors.New("model: field required")
	}
	ci := &CallInfo{Model: *req.Model, Stream: req.Stream, raw: body}
	ci.MaxTokens = req.MaxOutputTokens
	ci.Effort = req.Reasoning.Effort
	ci.PromptCacheKey = req.PromptCacheKey
	ci.Previous = req.Previous // POOL-18 (state.go)
	ci.StateRefs = stateRefs(body, req.Input)
	ci.Encrypted = bytes.Contains(req.Input, []byte(`"encrypted_content"`))
	ci.HasImage = hasTypedPart(req.Input, openaiImageTypes)
	input := bytes.TrimSpace(req.Input)
	switch {
	case len(input) > 0 && input[0] == '"': // input: "text" is one user message
		sys := req.Instructions
		ci.hashContent = func() string { return contentHash(sys, input) }
	case len(input) > 0 && input[0] == '[':
		var items []struct {
			Type    string  `json:"type"`
			Role    string  `json:"role"`
			Content rawView `json:"content"`
		}
		_ = json.Unmarshal(input, &items)
		var system []json.RawMessage
		if len(req.Instructions) > 0 {
			system = append(system, json.RawMessage(req.Instructions))
		}
		for _, it := range items {
			if it.Type != "" && it.Type != "message" {
				continue
			}
			if it.Role == "system" || it.Role == "developer" {
				system = append(system, json.RawMessage(it.Content))
			}
			if it.Role == "user" {
				user := it.Content
				ci.hashContent = func() string {
					sys, _ := json.Marshal(system)
					return contentHash(sys, user)
				}
				break
			}
		}
	}
	return ci, nil
}

func (ResponsesFlavour) RewriteBody(ci *CallInfo, target, effort string) ([]byte, error) {
	mv, _ := json.Marshal(target)
	out, ok := spliceTopLevel(ci.raw, "model", mv)
	if !ok {
		return nil, errors.New("model: field required")
	}
	if effort != "" && effort != ci.Effort {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(out, &top); err != nil {
			return nil, err
		}
		var rs map[string]json.RawMessage
		_ = json.Unmarshal(top["reasoning"], &rs)
		if rs == nil {
			rs = map[string]json.RawMessage{}
		}
		rs["effort"], _ = json.Marshal(openaiEffort(effort))
		rb, _ := json.Marshal(rs)
		if out, ok = spliceTopLevel(out, "reasoning", rb); !ok {
			return nil, errors.New("reasoning missing")
		}
	}
	return out, nil
}

// responsesUsage is the usage object of a Response.
type responsesUsage struct {
	Input   *int64 `json:"input_tokens"`
	Output  *int64 `json:"output_tokens"`
	Details struct {
		Cached *int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

func (r *responsesUsage) toUsage() Usage {
	var u Usage
	if r == nil {
		return u
	}
	if r.Output != nil {
		u.Output = *r.Output
	}
	if r.Input != nil {
		u.Input = *r.Input
	}
	if r.Details.Cached != nil {
		u.CacheRead = *r.Details.Cached
		u.Input = max(0, u.Input-u.CacheRead)
	}
	return u
}

// responseItem is an output item of a Response.
type responseItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"` // stored items an item_reference names (POOL-18)
	Arguments string `json:"arguments"`
	Encrypted string `json:"encrypted_content"` // reasoning items (POOL-18)
	Content   []struct {
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// visible: a tool call item (type "*_call"), or a message/reasoning item
// with non-empty text.
func (it *responseItem) visible() bool {
	if strings.HasSuffix(it.Type, "_call") {
		return true
	}
	for _, c := range it.Content {
		if c.Text != "" || c.Refusal != "" {
			return true
		}
	}
	for _, s := range it.Summary {
		if s.Text != "" {
			return true
		}
	}
	return false
}

// responseObject is the part of a Response the pool reads.
type responseObject struct {
	ID        string          `json:"id"`
	Model     string          `json:"model"`
	CreatedAt int64           `json:"created_at"`
	Status    string          `json:"status"`
	Output    []responseItem  `json:"output"`
	Usage     *responsesUsage `json:"usage"`
	Error     *openaiError    `json:"error"`
	// Conversation is the conversation the response was added to
	// (POOL-18): a string id or an object with one.
	Conversation json.RawMessage `json:"conversation"`
}

// InspectBody accepts a Response: an object with an "output" list or a
// "status", not "failed", and no "error" object; no visible output item is
// "empty".
func (ResponsesFlavour) InspectBody(ep Endpoint, body []byte) (Usage, string, string) {
	var r responseObject
	var e struct {
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &r) != nil || json.Unmarshal(body, &e) != nil {
		return Usage{}, config.ClassServer, "answer is not a JSON object"
	}
	if nonEmptyJSON(e.Error) || r.Status == "failed" {
		_, msg := ChatFlavour{}.ParseError(body)
		if msg == "" && r.Error != nil {
			msg = r.Error.Message
		}
		return Usage{}, config.ClassServer, "answer carries an error: " + Clip(msg)
	}
	if e.Output == nil && r.Status == "" {
		return Usage{}, config.ClassServer, "answer is not a Response (no output or status)"
	}
	for i := range r.Output {
		if r.Output[i].visible() {
			return r.Usage.toUsage(), "", ""
		}
	}
	return r.Usage.toUsage(), config.ClassEmpty, "answer has no content"
}

// ErrorEvent without stream context (sequence numbers unknown): an "error"
// event, then "response.failed" — the events OpenAI's SDKs and Codex stop on.
func (ResponsesFlavour) ErrorEvent(status int, msg string) []byte {
	w := responsesWatcher{seq: -1}
	return w.ErrorEvent(status, msg)
}

func (ResponsesFlavour) NewWatcher() StreamWatcher { return &responsesWatcher{seq: -1} }

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
	u         Usage
	seq       int64 // highest sequence_number seen, -1 before any
	id, model string
	createdAt int64
	sawError  bool     // an upstream "error" event was forwarded
	keys      []string // state produced by this stream (POOL-18)
}

// StateKeys lists the response id and encrypted reasoning this stream
// produced (POOL-18, state.go).
func (w *responsesWatcher) StateKeys() []string { return w.keys }

// StateKeys lists the state a complete Responses answer carries (POOL-18).
func (ResponsesFlavour) StateKeys(body []byte) []string {
	var r responseObject
	if json.Unmarshal(body, &r) != nil {
		return nil
	}
	return stateKeys(&r)
}

func (w *responsesWatcher) Usage() Usage { return w.u }

func (w *responsesWatcher) Observe(ev *SSEEvent, committed bool) Observation {
	if ev.Comment {
		return Observation{Verdict: VPreamble}
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
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Error   *openaiError    `json:"error"`
	}
	if json.Unmarshal(ev.Data, &v) != nil {
		return Observation{Verdict: VPreamble}
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
		return Observation{Verdict: VEnd}
	case name == "response.failed":
		e := openaiError{Message: "response failed"}
		if v.Response != nil && v.Response.Error != nil {
			e = *v.Response.Error
		}
		typ, n := e.typeAndCode()
		return Observation{Verdict: VError, ErrStatus: openaiStatus(typ, n), ErrType: typ, ErrMsg: e.Message}
	case name == "error":
		e := openaiError{Message: v.Message, Type: v.Type, Code: v.Code}
		if v.Error != nil {
			e = *v.Error
		}
		if e.Type == "error" {
			e.Type = ""
		}
		if committed {
			w.sawError = true
			return Observation{Verdict: VPreamble}
		}
		typ, n := e.typeAndCode()
		return Observation{Verdict: VError, ErrStatus: openaiStatus(typ, n), ErrType: typ, ErrMsg: e.Message}
	case committed:
		return Observation{Verdict: VPreamble}
	case strings.HasSuffix(name, ".delta"):
		if nonEmptyJSON(v.Delta) && string(bytes.TrimSpace(v.Delta)) != `""` {
			return Observation{Verdict: VVisible}
		}
	case strings.HasSuffix(name, ".done"):
		if v.Text != "" || v.Args != "" || (v.Item != nil && v.Item.visible()) {
			return Observation{Verdict: VVisible}
		}
	case name == "response.output_item.added":
		if v.Item != nil && strings.HasSuffix(v.Item.Type, "_call") {
			return Observation{Verdict: VVisible}
		}
	}
	return Observation{Verdict: VPreamble}
}

// ErrorEvent ends a committed stream the way the Responses API does: an
// "error" event (unless the upstream already sent one), then
// "response.failed" for the same response id, with sequence numbers
// continuing the stream's (SPEC POOL-7).
func (w *responsesWatcher) ErrorEvent(status int, msg string) []byte {
	_, code := openaiErrorType(status)
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
