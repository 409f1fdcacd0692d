package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// AnthropicFlavour is the Anthropic Messages API (SPEC POOL-1):
// POST /v1/messages, POST /v1/messages/count_tokens, GET /v1/models.
type AnthropicFlavour struct{}

func (AnthropicFlavour) Name() string { return config.APIAnthropic }

func (AnthropicFlavour) API() apikind.Kind { return apikind.Anthropic }

func (AnthropicFlavour) Endpoint(method, path string) (Endpoint, bool) {
	switch {
	case method == http.MethodPost && path == "/v1/messages":
		return Endpoint{Kind: EpGenerate, Upstream: path}, true
	case method == http.MethodPost && path == "/v1/messages/count_tokens":
		return Endpoint{Kind: EpCountTokens, Upstream: path}, true
	case method == http.MethodGet && path == "/v1/models":
		return Endpoint{Kind: EpModels}, true
	}
	return Endpoint{}, false
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
	System   rawView       `json:"system"`
	Messages []roleContent `json:"messages"`
}

func (AnthropicFlavour) ParseRequest(ep Endpoint, body []byte) (*CallInfo, error) {
	var req anthropicRequest
	if err := decodeRequest(body, &req); err != nil {
		return nil, errors.New("request body is not a valid JSON object")
	}
	if req.Model == nil || *req.Model == "" {
		return nil, errors.New("model: field required")
	}
	ci := &CallInfo{Model: *req.Model, Stream: req.Stream && ep.Kind == EpGenerate, raw: body}
	ci.MaxTokens = req.MaxTokens
	ci.Effort = req.OutputConfig.Effort
	if ci.Effort == "" && req.Thinking.Type == "enabled" && req.Thinking.BudgetTokens > 0 {
		ci.Effort, ci.budget = budgetEffort(req.Thinking.BudgetTokens), true
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
			ci.hashContent = func() string { return contentHash(sys, user) }
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
		Type    string  `json:"type"`
		Content rawView `json:"content"`
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

// contentHash is the fallback session identity (SPEC POOL-5): a hash of the
// system prompt and the whole first user message, with cache_control markers
// removed (clients move those between turns) and keys sorted.
// The parts are hashed in place (canonHash), never decoded or copied.
func contentHash(system, firstUser []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{system, firstUser} {
		canonHash(h, part, "cache_control", 0)
		h.Write([]byte{0})
	}
	return "content:" + hex.EncodeToString(h.Sum(nil))
}

func (AnthropicFlavour) RewriteBody(ci *CallInfo, target, effort string) ([]byte, error) {
	mv, _ := json.Marshal(target)
	out, ok := spliceTopLevel(ci.raw, "model", mv)
	if !ok {
		return nil, errors.New("model: field required")
	}
	if effort != "" && effort != ci.Effort && ci.budget {
		tb, _ := json.Marshal(thinkingFor(effort, ci.MaxTokens))
		if out, ok = spliceTopLevel(out, "thinking", tb); !ok {
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
		if out, ok = spliceTopLevel(out, "output_config", ocb); !ok {
			return nil, errors.New("output_config missing")
		}
	}
	return out, nil
}

// InspectBody accepts a Messages answer: an object of type "message" (or,
// from gateways that drop "type", role "assistant") with a content list, and
// no "error" object. A count_tokens answer only has to be a JSON object.
func (AnthropicFlavour) InspectBody(ep Endpoint, body []byte) (Usage, string, string) {
	var v struct {
		Type    string            `json:"type"`
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
		Usage   anthropicUsage    `json:"usage"`
		Error   json.RawMessage   `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil {
		return Usage{}, config.ClassServer, "answer is not a JSON object"
	}
	if nonEmptyJSON(v.Error) || v.Type == "error" {
		_, msg := AnthropicFlavour{}.ParseError(body)
		return Usage{}, config.ClassServer, "answer carries an error: " + Clip(msg)
	}
	if ep.Kind != EpGenerate {
		return Usage{}, "", ""
	}
	if v.Content == nil || (v.Type != "message" && !(v.Type == "" && v.Role == "assistant")) {
		return Usage{}, config.ClassServer, "answer is not a Messages response"
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

func (a anthropicUsage) toUsage() Usage {
	var u Usage
	a.mergeInto(&u)
	return u
}

// mergeInto overwrites the fields the event carries (message_delta usage is
// cumulative, so the last value wins).
func (a anthropicUsage) mergeInto(u *Usage) {
	for _, f := range []struct {
		src *int64
		dst *int64
	}{{a.Input, &u.Input}, {a.Output, &u.Output}, {a.CacheRead, &u.CacheRead}, {a.CacheCreation, &u.CacheCreation}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
}

func (AnthropicFlavour) ParseError(body []byte) (string, string) {
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

func (AnthropicFlavour) ErrorBody(status int, msg string, attempts []Attempt) []byte {
	type errObj struct {
		Type     string    `json:"type"`
		Message  string    `json:"message"`
		Attempts []Attempt `json:"attempts,omitempty"`
	}
	b, _ := json.Marshal(struct {
		Type  string `json:"type"`
		Error errObj `json:"error"`
	}{"error", errObj{anthropicErrorType(status), msg, attempts}})
	return b
}

func (AnthropicFlavour) ErrorEvent(status int, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": anthropicErrorType(status), "message": msg}})
	return []byte(fmt.Sprintf("event: error\ndata: %s\n\n", b))
}

var anthropicPing = []byte("event: ping\ndata: {\"type\": \"ping\"}\n\n")

func (AnthropicFlavour) PingEvent() []byte { return anthropicPing }

// Thinking budgets per unified effort (tokens), for requests that set
// thinking.budget_tokens instead of output_config.effort (SPEC POOL-12
// "Anthropic output_config.effort or the thinking budget"). 1024 is the
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
