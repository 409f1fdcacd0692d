package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// Flavour is the Anthropic Messages API (SPEC POOL-1):
// POST /v1/messages, POST /v1/messages/count_tokens, GET /v1/models.
type Flavour struct{}

func (Flavour) Name() string { return config.APIAnthropic }

func (Flavour) API() apikind.Kind { return apikind.Anthropic }

func (Flavour) Endpoint(method, path string) (neutral.Endpoint, bool) {
	switch {
	case method == http.MethodPost && path == "/v1/messages":
		return neutral.Endpoint{Kind: neutral.EpGenerate, Upstream: path}, true
	case method == http.MethodPost && path == "/v1/messages/count_tokens":
		return neutral.Endpoint{Kind: neutral.EpCountTokens, Upstream: path}, true
	case method == http.MethodGet && path == "/v1/models":
		return neutral.Endpoint{Kind: neutral.EpModels}, true
	}
	return neutral.Endpoint{}, false
}

// anthropicRequest is the part of a Messages request the pool reads.
type anthropicRequest struct {
	Model     *string `json:"model"`
	Stream    bool    `json:"stream"`
	MaxTokens int     `json:"max_tokens"`
	Metadata  struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
	OutputConfig struct {
		Effort string `json:"effort"`
	} `json:"output_config"`
	Thinking struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	System   wirefmt.RawView       `json:"system"`
	Messages []wirefmt.RoleContent `json:"messages"`
}

func (Flavour) ParseRequest(ep neutral.Endpoint, body []byte) (*neutral.CallInfo, error) {
	var req anthropicRequest
	if err := wirefmt.DecodeRequest(body, &req); err != nil {
		return nil, errors.New("request body is not a valid JSON object")
	}
	if req.Model == nil || *req.Model == "" {
		return nil, errors.New("model: field required")
	}
	ci := &neutral.CallInfo{Model: *req.Model, Stream: req.Stream && ep.Kind == neutral.EpGenerate, Raw: body}
	ci.MaxTokens = req.MaxTokens
	ci.Effort = req.OutputConfig.Effort
	if ci.Effort == "" && req.Thinking.Type == "enabled" && req.Thinking.BudgetTokens > 0 {
		ci.Effort, ci.Budget = budgetEffort(req.Thinking.BudgetTokens), true
	}
	ci.MetadataSession = claudeSessionFromUserID(req.Metadata.UserID)
	for _, m := range req.Messages {
		if hasImage(m.Content, 0) {
			ci.HasImage = true
		}
		if !ci.Signed && anthropicSigned(m.Role, m.Content) {
			ci.Signed = true
		}
	}
	for _, m := range req.Messages {
		if m.Role == "user" {
			sys, user := req.System, m.Content
			ci.HashContent = func() string { return neutral.ContentHash(sys, user) }
			break
		}
	}
	return ci, nil
}

// claudeSessionFromUserID finds the session id in Claude Code's
// metadata.user_id: a JSON string {"session_id": …}, or the legacy
// "user_<hash>_account_<uuid>_session_<uuid>" of older builds (SPEC POOL-5).
func claudeSessionFromUserID(uid string) string {
	if uid == "" {
		return ""
	}
	if strings.HasPrefix(uid, "{") {
		var v struct {
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal([]byte(uid), &v) == nil {
			return v.SessionID
		}
		return ""
	}
	if i := strings.LastIndex(uid, "_session_"); i >= 0 {
		return uid[i+len("_session_"):]
	}
	return ""
}

// hasImage reports an image block in message content, including images
// nested in tool_result content.
func hasImage(content []byte, depth int) bool {
	if depth > 3 || len(content) == 0 || content[0] != '[' {
		return false
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Content wirefmt.RawView `json:"content"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return false
	}
	for _, b := range blocks {
		if b.Type == "image" || hasImage(b.Content, depth+1) {
			return true
		}
	}
	return false
}

func (Flavour) RewriteBody(ci *neutral.CallInfo, target, effort string) ([]byte, error) {
	mv, _ := json.Marshal(target)
	out, ok := wirefmt.SpliceTopLevel(ci.Raw, "model", mv)
	if !ok {
		return nil, errors.New("model: field required")
	}
	if effort != "" && effort != ci.Effort && ci.Budget {
		tb, _ := json.Marshal(thinkingFor(effort, ci.MaxTokens))
		if out, ok = wirefmt.SpliceTopLevel(out, "thinking", tb); !ok {
			return nil, errors.New("thinking missing")
		}
		return out, nil
	}
	if effort != "" && effort != ci.Effort {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(out, &top); err != nil {
			return nil, err
		}
		var oc map[string]json.RawMessage
		_ = json.Unmarshal(top["output_config"], &oc)
		if oc == nil {
			oc = map[string]json.RawMessage{}
		}
		oc["effort"], _ = json.Marshal(effort)
		ocb, _ := json.Marshal(oc)
		if out, ok = wirefmt.SpliceTopLevel(out, "output_config", ocb); !ok {
			return nil, errors.New("output_config missing")
		}
	}
	return out, nil
}

// InspectBody accepts a Messages answer: an object of type "message" (or,
// from gateways that drop "type", role "assistant") with a content list, and
// no "error" object. A count_tokens answer only has to be a JSON object.
func (Flavour) InspectBody(ep neutral.Endpoint, body []byte) (neutral.Accounting, string, string) {
	var v struct {
		Type    string            `json:"type"`
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
		Usage   anthropicUsage    `json:"usage"`
		Error   json.RawMessage   `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil {
		return neutral.Accounting{}, config.ClassServer, "answer is not a JSON object"
	}
	if wirefmt.NonEmptyJSON(v.Error) || v.Type == "error" {
		_, msg := Flavour{}.ParseError(body)
		return neutral.Accounting{}, config.ClassServer, "answer carries an error: " + neutral.Clip(msg)
	}
	if ep.Kind != neutral.EpGenerate {
		return neutral.Accounting{}, "", ""
	}
	if v.Content == nil || (v.Type != "message" && !(v.Type == "" && v.Role == "assistant")) {
		return neutral.Accounting{}, config.ClassServer, "answer is not a Messages response"
	}
	if len(v.Content) == 0 {
		return v.Usage.toUsage(), config.ClassEmpty, "answer has no content"
	}
	return v.Usage.toUsage(), "", ""
}

type anthropicUsage struct {
	Input         *int64 `json:"input_tokens"`
	Output        *int64 `json:"output_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
}

func (a anthropicUsage) toUsage() neutral.Accounting {
	var u neutral.Accounting
	a.mergeInto(&u)
	return u
}

// mergeInto overwrites the fields the event carries (message_delta usage is
// cumulative, so the last value wins).
func (a anthropicUsage) mergeInto(u *neutral.Accounting) {
	for _, f := range []struct {
		src *int64
		dst *int64
	}{{a.Input, &u.Input}, {a.Output, &u.Output}, {a.CacheRead, &u.CacheRead}, {a.CacheCreation, &u.CacheCreation}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
}

func (Flavour) ParseError(body []byte) (string, string) {
	var v struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &v) != nil {
		return "", ""
	}
	if v.Error.Message == "" {
		v.Error.Message = v.Message
	}
	return v.Error.Type, v.Error.Message
}

// anthropicErrorType is the Anthropic error type for an HTTP status
// (docs.anthropic.com "Errors").
func anthropicErrorType(status int) string {
	switch status {
	case 400, 422:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 504:
		return "timeout_error"
	case 503, 529:
		return "overloaded_error"
	}
	return "api_error"
}

// anthropicStatus maps an error type from an error event back to a status.
func anthropicStatus(typ string) int {
	switch typ {
	case "invalid_request_error":
		return 400
	case "authentication_error":
		return 401
	case "billing_error":
		return 402
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "request_too_large":
		return 413
	case "rate_limit_error":
		return 429
	case "overloaded_error":
		return 529
	case "timeout_error":
		return 504
	}
	return 500
}

func (Flavour) ErrorBody(status int, msg string, attempts []neutral.Attempt) []byte {
	type errObj struct {
		Type     string            `json:"type"`
		Message  string            `json:"message"`
		Attempts []neutral.Attempt `json:"attempts,omitempty"`
	}
	b, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Error errObj `json:"error"`
	}{"error", errObj{anthropicErrorType(status), msg, attempts}})
	return b
}

func (Flavour) ErrorEvent(status int, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": anthropicErrorType(status), "message": msg}})
	return []byte(fmt.Sprintf("event: error\ndata: %s\n\n", b))
}

var anthropicPing = []byte("event: ping\ndata: {\"type\": \"ping\"}\n\n")

func (Flavour) PingEvent() []byte { return anthropicPing }

// Thinking budgets per unified effort (tokens), for requests that set
// thinking.budget_tokens instead of output_config.effort (Anthropic takes
// either). 1024 is the
// API's minimum budget.
var effortBudgets = map[string]int{"minimal": 1024, "low": 4096, "medium": 16384, "high": 32768, "xhigh": 49152, "max": 64000}

// budgetEffort places a thinking budget on Anthropic's effort scale: below
// 8192 tokens low, below 24576 medium, below 49152 high, else max.
func budgetEffort(budget int) string {
	switch {
	case budget < 8192:
		return "low"
	case budget < 24576:
		return "medium"
	case budget < 49152:
		return "high"
	}
	return "max"
}

// thinkingFor is the thinking object for a member's effort: disabled for
// off/none, else enabled with that effort's budget, kept below max_tokens
// (the API requires budget_tokens < max_tokens) but not under 1024.
func thinkingFor(effort string, maxTokens int) map[string]any {
	b, ok := effortBudgets[effort]
	if !ok {
		return map[string]any{"type": "disabled"}
	}
	if maxTokens > 1024 && b >= maxTokens {
		b = max(1024, maxTokens-1)
	}
	return map[string]any{"type": "enabled", "budget_tokens": b}
}
