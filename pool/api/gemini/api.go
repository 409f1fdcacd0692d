package gemini

import (
	"bytes"
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

// Flavour is the Gemini API (ai.google.dev, v1beta; SPEC POOL-21):
// POST /v1beta/models/{model}:generateContent, :streamGenerateContent
// (?alt=sse), :countTokens and GET /v1beta/models. The model and the
// streaming choice are in the path, so Endpoint carries them.
type Flavour struct{}

func (Flavour) Name() string { return config.APIGemini }

func (Flavour) API() apikind.Kind { return apikind.Gemini }

func (Flavour) Endpoint(method, path string) (neutral.Endpoint, bool) {
	if method == http.MethodGet && (path == "/v1beta/models" || path == "/v1beta/models/") {
		return neutral.Endpoint{Kind: neutral.EpModels}, true
	}
	rest, ok := strings.CutPrefix(path, "/v1beta/models/")
	i := strings.LastIndexByte(rest, ':')
	if !ok || method != http.MethodPost || i <= 0 {
		return neutral.Endpoint{}, false
	}
	model := rest[:i]
	switch rest[i+1:] {
	case "generateContent":
		return neutral.Endpoint{Kind: neutral.EpGenerate, Upstream: path, Model: model}, true
	case "streamGenerateContent":
		return neutral.Endpoint{Kind: neutral.EpGenerate, Upstream: path, Model: model, Stream: true}, true
	case "countTokens":
		return neutral.Endpoint{Kind: neutral.EpCountTokens, Upstream: path, Model: model}, true
	}
	return neutral.Endpoint{}, false
}

// geminiRequest is the part of a generateContent body the pool reads.
type geminiRequest struct {
	Contents []struct {
		Role  string          `json:"role"`
		Parts json.RawMessage `json:"parts"`
	} `json:"contents"`
	SystemInstruction json.RawMessage `json:"systemInstruction"`
	SystemSnake       json.RawMessage `json:"system_instruction"`
	GenerationConfig  struct {
		MaxOutputTokens int `json:"maxOutputTokens"`
	} `json:"generationConfig"`
}

func (Flavour) ParseRequest(ep neutral.Endpoint, body []byte) (*neutral.CallInfo, error) {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, errors.New("request body is not a valid JSON object of the generateContent shape")
	}
	if ep.Model == "" {
		return nil, errors.New("model: missing in the path")
	}
	ci := &neutral.CallInfo{Model: ep.Model, Stream: ep.Stream, Raw: body}
	ci.Signed = bytes.Contains(body, neutral.QuotedThoughtSig)
	ci.MaxTokens = req.GenerationConfig.MaxOutputTokens
	sys := req.SystemInstruction
	if len(sys) == 0 {
		sys = req.SystemSnake
	}
	for _, c := range req.Contents {
		if bytes.Contains(c.Parts, []byte(`"image/`)) {
			ci.HasImage = true
		}
		if ci.HashContent == nil && (c.Role == "" || c.Role == "user") {
			user := c.Parts
			ci.HashContent = func() string { return neutral.ContentHash(sys, user) }
		}
	}
	return ci, nil
}

// RewriteBody returns the body unchanged: Gemini's model is in the path
// (the call builds it for the member's target), and an effort is a thinking
// budget the pool does not map.
func (Flavour) RewriteBody(ci *neutral.CallInfo, target, effort string) ([]byte, error) {
	return ci.Raw, nil
}

// geminiAnswer is the part of a GenerateContentResponse (one stream chunk
// or the whole answer) the pool reads.
type geminiAnswer struct {
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text         string          `json:"text"`
				FunctionCall json.RawMessage `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		Prompt  int64 `json:"promptTokenCount"`
		Output  int64 `json:"candidatesTokenCount"`
		Cached  int64 `json:"cachedContentTokenCount"`
		Thought int64 `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	Error json.RawMessage `json:"error"`
}

// visible: a non-empty text (or thought) part or a function call.
func (a *geminiAnswer) visible() bool {
	for _, c := range a.Candidates {
		for _, p := range c.Content.Parts {
			if p.Text != "" || wirefmt.NonEmptyJSON(p.FunctionCall) {
				return true
			}
		}
	}
	return false
}

func (a *geminiAnswer) finished() bool {
	for _, c := range a.Candidates {
		if c.FinishReason != "" {
			return true
		}
	}
	return a.PromptFeedback != nil && a.PromptFeedback.BlockReason != ""
}

func (a *geminiAnswer) usage() (neutral.Accounting, bool) {
	m := a.UsageMetadata
	if m == nil {
		return neutral.Accounting{}, false
	}
	return neutral.Accounting{Input: max(0, m.Prompt-m.Cached), CacheRead: m.Cached, Output: m.Output + m.Thought}, true
}

// InspectBody accepts a GenerateContentResponse with a candidate holding
// content; a countTokens answer only has to be a JSON object.
func (Flavour) InspectBody(ep neutral.Endpoint, body []byte) (neutral.Accounting, string, string) {
	var a geminiAnswer
	if json.Unmarshal(body, &a) != nil {
		return neutral.Accounting{}, config.ClassServer, "answer is not a JSON object"
	}
	if wirefmt.NonEmptyJSON(a.Error) {
		_, msg := Flavour{}.ParseError(body)
		return neutral.Accounting{}, config.ClassServer, "answer carries an error: " + neutral.Clip(msg)
	}
	if ep.Kind != neutral.EpGenerate {
		return neutral.Accounting{}, "", ""
	}
	u, _ := a.usage()
	if a.Candidates == nil && !a.finished() {
		return u, config.ClassServer, "answer is not a generateContent response (no candidates)"
	}
	if !a.visible() {
		return u, config.ClassEmpty, "answer has no content"
	}
	return u, "", ""
}

// geminiError is google.rpc.Status as the Gemini API sends it:
// {"error": {"code": 429, "message", "status": "RESOURCE_EXHAUSTED"}};
// streams may wrap it in an array.
type geminiError struct {
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

func parseGeminiError(body []byte) (code int, status, msg string) {
	var e geminiError
	if json.Unmarshal(body, &e) != nil || e.Error == nil {
		var arr []geminiError
		if json.Unmarshal(body, &arr) != nil || len(arr) == 0 || arr[0].Error == nil {
			return 0, "", ""
		}
		e = arr[0]
	}
	return e.Error.Code, e.Error.Status, e.Error.Message
}

func (Flavour) ParseError(body []byte) (string, string) {
	_, status, msg := parseGeminiError(body)
	return status, msg
}

// geminiStatus is the google.rpc.Code name the pool sends for an HTTP
// status.
func geminiStatus(status int) string {
	switch status {
	case 400, 413, 422:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 501:
		return "UNIMPLEMENTED"
	case 503, 529:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}

func (Flavour) ErrorBody(status int, msg string, attempts []neutral.Attempt) []byte {
	type errObj struct {
		Code     int               `json:"code"`
		Message  string            `json:"message"`
		Status   string            `json:"status"`
		Attempts []neutral.Attempt `json:"attempts,omitempty"`
	}
	b, _ := json.Marshal(struct {
		Error errObj `json:"error"`
	}{errObj{Code: status, Message: msg, Status: geminiStatus(status), Attempts: attempts}})
	return b
}

// ErrorEvent is a data event holding the error document (what the Gemini
// API sends when a stream fails).
func (f Flavour) ErrorEvent(status int, msg string) []byte {
	return []byte(fmt.Sprintf("data: %s\n\n", f.ErrorBody(status, msg, nil)))
}

// PingEvent is an SSE comment, which SSE parsers skip.
func (Flavour) PingEvent() []byte { return wirefmt.OpenaiPing }
