package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// Flavour is the OpenAI Chat Completions API (SPEC POOL-1):
// POST /v1/chat/completions and GET /v1/models. It also routes
// POST /v1/responses to ResponsesFlavour, so one "openai" pool serves both
// (the endpoint carries the flavour that handles it).
type Flavour struct{}

func (Flavour) Name() string { return config.APIOpenAI }

func (Flavour) API() apikind.Kind { return apikind.Chat }

func (Flavour) Endpoint(method, path string) (neutral.Endpoint, bool) {
	switch {
	case method == http.MethodPost && path == "/v1/chat/completions":
		return neutral.Endpoint{Kind: neutral.EpGenerate, Upstream: path}, true
	case method == http.MethodPost && path == "/v1/responses":
		return neutral.Endpoint{Kind: neutral.EpGenerate, Upstream: path, API: apikind.Responses}, true
	case method == http.MethodGet && path == "/v1/models":
		return neutral.Endpoint{Kind: neutral.EpModels}, true
	}
	return neutral.Endpoint{}, false
}

// chatRequest is the part of a Chat Completions request the pool reads.
type chatCall struct {
	Model               *string               `json:"model"`
	Stream              bool                  `json:"stream"`
	MaxTokens           int                   `json:"max_tokens"`
	MaxCompletionTokens int                   `json:"max_completion_tokens"`
	ReasoningEffort     string                `json:"reasoning_effort"`
	PromptCacheKey      string                `json:"prompt_cache_key"`
	Messages            []wirefmt.RoleContent `json:"messages"`
}

func (Flavour) ParseRequest(ep neutral.Endpoint, body []byte) (*neutral.CallInfo, error) {
	var req chatCall
	if err := wirefmt.DecodeRequest(body, &req); err != nil {
		return nil, errors.New("request body is not a valid JSON object of the Chat Completions shape")
	}
	if req.Model == nil || *req.Model == "" {
		return nil, errors.New("model: field required")
	}
	ci := &neutral.CallInfo{Model: *req.Model, Stream: req.Stream, Raw: body}
	ci.MaxTokens = max(req.MaxTokens, req.MaxCompletionTokens)
	ci.Effort = req.ReasoningEffort
	ci.PromptCacheKey = req.PromptCacheKey
	var system []json.RawMessage
	for _, m := range req.Messages {
		if HasTypedPart(m.Content, OpenaiImageTypes) {
			ci.HasImage = true
		}
		switch {
		case ci.HashContent != nil:
		case m.Role == "system" || m.Role == "developer":
			system = append(system, json.RawMessage(m.Content))
		case m.Role == "user":
			user := m.Content
			ci.HashContent = func() string { return neutral.ContentHash(systemArray(system), user) }
		}
	}
	return ci, nil
}

// systemArray is json.Marshal(system), the system messages' contents as
// one array for the content hash (SPEC POOL-5), without its re-validation
// and compaction of every (often 16 KiB and more) prompt when each is a
// string token json.Marshal writes unchanged: no '<', '>', '&' (escaped
// as \u003c …) and no U+2028/U+2029. FuzzSystemArray compares the two.
func systemArray(system []json.RawMessage) []byte {
	n := 2
	for _, s := range system {
		if len(s) < 2 || s[0] != '"' || bytes.ContainsAny(s, "<>&") || bytes.Contains(s, []byte("\u2028")) || bytes.Contains(s, []byte("\u2029")) {
			b, _ := json.Marshal(system)
			return b
		}
		n += len(s) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, s := range system {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, s...)
	}
	return append(out, ']')
}

// OpenaiImageTypes are the content part types that carry an image: Chat
// Completions "image_url", Responses "input_image".
var OpenaiImageTypes = map[string]bool{"image_url": true, "input_image": true}

// HasTypedPart reports whether raw JSON contains, at any depth up to 6, an
// object whose "type" is in types (image parts nested in tool results
// included).
func HasTypedPart(raw []byte, types map[string]bool) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '[' && raw[0] != '{') {
		return false
	}
	found := false
	for typ := range types {
		if bytes.Contains(raw, []byte(typ)) {
			found = true
		}
	}
	if !found {
		return false // cheap pre-check: no part type name anywhere
	}
	return wirefmt.HasTypedRaw(raw, types, 0)
}

// OpenaiEffort is the OpenAI spelling of a unified effort ("off" → "none").
func OpenaiEffort(e string) string {
	if e == "off" {
		return "none"
	}
	return e
}

func (Flavour) RewriteBody(ci *neutral.CallInfo, target, effort string) ([]byte, error) {
	mv, _ := json.Marshal(target)
	out, ok := wirefmt.SpliceTopLevel(ci.Raw, "model", mv)
	if !ok {
		return nil, errors.New("model: field required")
	}
	if effort != "" && effort != ci.Effort {
		ev, _ := json.Marshal(OpenaiEffort(effort))
		if out, ok = wirefmt.SpliceTopLevel(out, "reasoning_effort", ev); !ok {
			return nil, errors.New("reasoning_effort missing")
		}
	}
	return out, nil
}

// openaiUsage is the usage object of Chat Completions, with DeepSeek's
// prompt_cache_hit/miss fields (docs/POOL.md, why stickiness matters).
type openaiUsage struct {
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
	Details          struct {
		Cached *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CacheHit  *int64 `json:"prompt_cache_hit_tokens"`
	CacheMiss *int64 `json:"prompt_cache_miss_tokens"`
}

// toUsage converts to the pool's accounting: Input = uncached prompt tokens,
// CacheRead = cached ones (so HitRatio = cached / prompt).
func (o *openaiUsage) toUsage() neutral.Accounting {
	var u neutral.Accounting
	if o == nil {
		return u
	}
	if o.CompletionTokens != nil {
		u.Output = *o.CompletionTokens
	}
	if o.CacheHit != nil || o.CacheMiss != nil {
		if o.CacheHit != nil {
			u.CacheRead = *o.CacheHit
		}
		if o.CacheMiss != nil {
			u.Input = *o.CacheMiss
		}
		return u
	}
	if o.PromptTokens != nil {
		u.Input = *o.PromptTokens
	}
	if o.Details.Cached != nil {
		u.CacheRead = *o.Details.Cached
		u.Input = max(0, u.Input-u.CacheRead)
	}
	return u
}

// chatDelta is the part of a choice's delta (stream) or message (non-stream)
// that decides whether there is visible output.
type chatDelta struct {
	Content          *string         `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        *string         `json:"reasoning"`
	Refusal          *string         `json:"refusal"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
	FunctionCall     json.RawMessage `json:"function_call"`
}

// visible: non-empty content, reasoning_content (or "reasoning"), refusal,
// or any tool call: the commit point of a Chat stream (docs/POOL.md).
func (d *chatDelta) visible() bool {
	for _, s := range []*string{d.Content, d.ReasoningContent, d.Reasoning, d.Refusal} {
		if s != nil && *s != "" {
			return true
		}
	}
	return wirefmt.NonEmptyJSON(d.ToolCalls) || wirefmt.NonEmptyJSON(d.FunctionCall)
}

// InspectBody accepts a chat completion: an object with a "choices" list
// and no "error" object; no choice with visible output is "empty".
func (Flavour) InspectBody(ep neutral.Endpoint, body []byte) (neutral.Accounting, string, string) {
	var v struct {
		Choices []struct {
			Message chatDelta `json:"message"`
		} `json:"choices"`
		Usage *openaiUsage    `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil {
		return neutral.Accounting{}, config.ClassServer, "answer is not a JSON object"
	}
	if wirefmt.NonEmptyJSON(v.Error) {
		_, msg := Flavour{}.ParseError(body)
		return neutral.Accounting{}, config.ClassServer, "answer carries an error: " + neutral.Clip(msg)
	}
	if v.Choices == nil {
		return neutral.Accounting{}, config.ClassServer, "answer is not a chat completion (no choices)"
	}
	for i := range v.Choices {
		if v.Choices[i].Message.visible() {
			return v.Usage.toUsage(), "", ""
		}
	}
	return v.Usage.toUsage(), config.ClassEmpty, "answer has no content"
}

// OpenaiError is the error document of the OpenAI APIs:
// {"error": {"message", "type", "param", "code"}}; code may be a string or
// (some compatible servers) a number.
type OpenaiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// TypeAndCode joins type and string code ("invalid_request_error
// model_not_found") so classification sees both.
func (e OpenaiError) TypeAndCode() (string, int) {
	code := strings.Trim(string(bytes.TrimSpace(e.Code)), `"`)
	if code == "null" {
		code = ""
	}
	if n, err := strconv.Atoi(code); err == nil {
		return e.Type, n
	}
	return strings.TrimSpace(e.Type + " " + code), 0
}

func (Flavour) ParseError(body []byte) (string, string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) != nil {
		return "", ""
	}
	var e OpenaiError
	if json.Unmarshal(v.Error, &e) != nil {
		_ = json.Unmarshal(v.Error, &e.Message) // {"error": "text"}
	}
	if e.Message == "" {
		e.Message = v.Message
	}
	typ, _ := e.TypeAndCode()
	return typ, e.Message
}

// OpenaiStatus maps an in-stream error (type and code, or a numeric code) to
// the HTTP status it stands for, so it is classified like an HTTP answer
// (SPEC POOL-10).
func OpenaiStatus(typ string, numeric int) int {
	if numeric >= 400 && numeric <= 599 {
		return numeric
	}
	t := strings.ToLower(typ)
	switch {
	case strings.Contains(t, "insufficient_quota"), strings.Contains(t, "rate_limit"):
		return 429
	case strings.Contains(t, "authentication"), strings.Contains(t, "invalid_api_key"):
		return 401
	case strings.Contains(t, "permission"):
		return 403
	case strings.Contains(t, "model_not_found"), strings.Contains(t, "not_found"):
		return 404
	case strings.Contains(t, "overloaded"):
		return 529
	case strings.Contains(t, "timeout"):
		return 504
	case strings.Contains(t, "invalid"), strings.Contains(t, "context_length"), strings.Contains(t, "bad_request"):
		return 400
	}
	return 500
}

// OpenaiErrorType is the error type and code the pool puts in its own OpenAI
// error documents for an HTTP status.
func OpenaiErrorType(status int) (typ, code string) {
	switch status {
	case 400, 413, 422:
		return "invalid_request_error", "invalid_request"
	case 401:
		return "authentication_error", "invalid_api_key"
	case 402:
		return "insufficient_quota", "insufficient_quota"
	case 403:
		return "permission_error", "permission_denied"
	case 404:
		return "invalid_request_error", "not_found"
	case 405:
		return "invalid_request_error", "method_not_allowed"
	case 429:
		return "rate_limit_error", "rate_limit_exceeded"
	case 501:
		return "server_error", "not_implemented"
	case 503, 529:
		return "server_error", "overloaded"
	case 504:
		return "server_error", "timeout"
	}
	return "server_error", "server_error"
}

func (Flavour) ErrorBody(status int, msg string, attempts []neutral.Attempt) []byte {
	typ, code := OpenaiErrorType(status)
	type errObj struct {
		Message  string            `json:"message"`
		Type     string            `json:"type"`
		Param    *string           `json:"param"`
		Code     string            `json:"code"`
		Attempts []neutral.Attempt `json:"attempts,omitempty"`
	}
	b, _ := json.Marshal(struct {
		Error errObj `json:"error"`
	}{errObj{Message: msg, Type: typ, Code: code, Attempts: attempts}})
	return b
}

// ErrorEvent is the error chunk OpenAI's SDKs raise on: a data line holding
// an error document (Chat has no standard mid-stream error), and no [DONE].
func (f Flavour) ErrorEvent(status int, msg string) []byte {
	typ, code := OpenaiErrorType(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	return []byte(fmt.Sprintf("data: %s\n\n", b))
}

func (Flavour) PingEvent() []byte { return wirefmt.OpenaiPing }
