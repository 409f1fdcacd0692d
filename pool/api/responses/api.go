package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// Flavour is the OpenAI Responses API (SPEC POOL-1, the only API
// Codex CLI speaks): POST /v1/responses, streamed or not. Its pools, routes,
// error documents and pings are Chat Completions' (an `openai` channel
// speaks both); requests, the commit point and in-stream errors are its
// own. Every method is written out, none inherited, so that nothing of
// Chat's is used for Responses by omission.
type Flavour struct{}

// openai is the Chat Completions flavour whose routes and error shapes
// Responses shares.
var openai chat.Flavour

// API is apikind.Responses.
func (Flavour) API() apikind.Kind { return apikind.Responses }

// Name is the channel api word of the pools it serves (config.APIOpenAI).
func (Flavour) Name() string { return openai.Name() }

// Endpoint maps a path of an `openai` pool to its endpoint (Chat's routes,
// which include /v1/responses).
func (Flavour) Endpoint(method, path string) (neutral.Endpoint, bool) {
	return openai.Endpoint(method, path)
}

// ParseError reads an OpenAI error document.
func (Flavour) ParseError(body []byte) (typ, msg string) { return openai.ParseError(body) }

// ErrorBody renders a pool error as an OpenAI error document.
func (Flavour) ErrorBody(status int, msg string, attempts []neutral.Attempt) []byte {
	return openai.ErrorBody(status, msg, attempts)
}

// PingEvent is the keepalive comment OpenAI streams take.
func (Flavour) PingEvent() []byte { return openai.PingEvent() }

// responsesRequest is the part of a Responses request the pool reads.
type responsesRequest struct {
	Model           *string         `json:"model"`
	Stream          bool            `json:"stream"`
	MaxOutputTokens int             `json:"max_output_tokens"`
	Instructions    wirefmt.RawView `json:"instructions"`
	Input           wirefmt.RawView `json:"input"`
	PromptCacheKey  string          `json:"prompt_cache_key"`
	Previous        string          `json:"previous_response_id"`
	Reasoning       struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
}

func (Flavour) ParseRequest(ep neutral.Endpoint, body []byte) (*neutral.CallInfo, error) {
	var req responsesRequest
	if err := wirefmt.DecodeRequest(body, &req); err != nil {
		return nil, errors.New("request body is not a valid JSON object of the Responses shape")
	}
	if req.Model == nil || *req.Model == "" {
		return nil, errors.New("model: field required")
	}
	ci := &neutral.CallInfo{Model: *req.Model, Stream: req.Stream, Raw: body}
	ci.MaxTokens = req.MaxOutputTokens
	ci.Effort = req.Reasoning.Effort
	ci.PromptCacheKey = req.PromptCacheKey
	ci.Previous = req.Previous // the call starts on the member that stored it
	ci.StateRefs = stateRefs(body, req.Input)
	ci.Encrypted = bytes.Contains(req.Input, []byte(`"encrypted_content"`))
	ci.HasImage = chat.HasTypedPart(req.Input, chat.OpenaiImageTypes)
	input := bytes.TrimSpace(req.Input)
	switch {
	case len(input) > 0 && input[0] == '"': // input: "text" is one user message
		sys := req.Instructions
		ci.HashContent = func() string { return neutral.ContentHash(sys, input) }
	case len(input) > 0 && input[0] == '[':
		var items []struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content wirefmt.RawView `json:"content"`
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
				ci.HashContent = func() string {
					sys, _ := json.Marshal(system)
					return neutral.ContentHash(sys, user)
				}
				break
			}
		}
	}
	return ci, nil
}

func (Flavour) RewriteBody(ci *neutral.CallInfo, target, effort string) ([]byte, error) {
	mv, _ := json.Marshal(target)
	out, ok := wirefmt.SpliceTopLevel(ci.Raw, "model", mv)
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
		rs["effort"], _ = json.Marshal(chat.OpenaiEffort(effort))
		rb, _ := json.Marshal(rs)
		if out, ok = wirefmt.SpliceTopLevel(out, "reasoning", rb); !ok {
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

func (r *responsesUsage) toUsage() neutral.Accounting {
	var u neutral.Accounting
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
	ID        string `json:"id"` // stored items an item_reference names
	Arguments string `json:"arguments"`
	Encrypted string `json:"encrypted_content"` // reasoning items
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
	ID        string            `json:"id"`
	Model     string            `json:"model"`
	CreatedAt int64             `json:"created_at"`
	Status    string            `json:"status"`
	Output    []responseItem    `json:"output"`
	Usage     *responsesUsage   `json:"usage"`
	Error     *chat.OpenaiError `json:"error"`
	// Conversation is the conversation the response was added to: a string id or an
	// object with one.
	Conversation json.RawMessage `json:"conversation"`
}

// InspectBody accepts a Response: an object with an "output" list or a
// "status", not "failed", and no "error" object; no visible output item is
// "empty".
func (Flavour) InspectBody(ep neutral.Endpoint, body []byte) (neutral.Accounting, string, string) {
	var r responseObject
	var e struct {
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &r) != nil || json.Unmarshal(body, &e) != nil {
		return neutral.Accounting{}, config.ClassServer, "answer is not a JSON object"
	}
	if wirefmt.NonEmptyJSON(e.Error) || r.Status == "failed" {
		_, msg := openai.ParseError(body)
		if msg == "" && r.Error != nil {
			msg = r.Error.Message
		}
		return neutral.Accounting{}, config.ClassServer, "answer carries an error: " + neutral.Clip(msg)
	}
	if e.Output == nil && r.Status == "" {
		return neutral.Accounting{}, config.ClassServer, "answer is not a Response (no output or status)"
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
func (Flavour) ErrorEvent(status int, msg string) []byte {
	w := responsesWatcher{seq: -1}
	return w.ErrorEvent(status, msg)
}

// StateKeys lists the state a complete Responses answer carries (SPEC POOL-18).
func (Flavour) StateKeys(body []byte) []string {
	var r responseObject
	if json.Unmarshal(body, &r) != nil {
		return nil
	}
	return stateKeys(&r)
}
