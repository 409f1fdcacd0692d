package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// GeminiFlavour is the Gemini API (ai.google.dev, v1beta; SPEC POOL-21):
// POST /v1beta/models/{model}:generateContent, :streamGenerateContent
// (?alt=sse), :countTokens and GET /v1beta/models. The model and the
// streaming choice are in the path, so Endpoint carries them.
type GeminiFlavour struct{}

func (GeminiFlavour) Name() string { return config.APIGemini }

func (GeminiFlavour) API() apikind.Kind { return apikind.Gemini }

func (GeminiFlavour) Endpoint(method, path string) (Endpoint, bool) {
	if method == http.MethodGet && (path == "/v1beta/models" || path == "/v1beta/models/") {
		return Endpoint{Kind: EpModels}, true
	}
	rest, ok := strings.CutPrefix(path, "/v1beta/models/")
	i := strings.LastIndexByte(rest, ':')
	if !ok || method != http.MethodPost || i <= 0 {
		return Endpoint{}, false
	}
	model := rest[:i]
	switch rest[i+1:] {
	case "generateContent":
		return Endpoint{Kind: EpGenerate, Upstream: path, Model: model}, true
	case "streamGenerateContent":
		return Endpoint{Kind: EpGenerate, Upstream: path, Model: model, Stream: true}, true
	case "countTokens":
		return Endpoint{Kind: EpCountTokens, Upstream: path, Model: model}, true
	}
	return Endpoint{}, false
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

func (GeminiFlavour) ParseRequest(ep Endpoint, body []byte) (*CallInfo, error) {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, errors.New("request body is not a valid JSON object of the generateContent shape")
	}
	if ep.Model == "" {
		return nil, errors.New("model: missing in the path")
	}
	ci := &CallInfo{Model: ep.Model, Stream: ep.Stream, raw: body}
	ci.Signed = bytes.Contains(body, quotedThoughtSig)
	ci.MaxTokens = req.GenerationConfig.MaxOutputTokens
	sys := req.SystemInstruction
	if len(sys) == 0 {
		sys = req.SystemSnake
	}
	for _, c := range req.Contents {
		if bytes.Contains(c.Parts, []byte(`"image/`)) {
			ci.HasImage = true
		}
		if ci.hashContent == nil && (c.Role == "" || c.Role == "user") {
			user := c.Parts
			ci.hashContent = func() string { return contentHash(sys, user) }
		}
	}
	return ci, nil
}

// RewriteBody returns the body unchanged: Gemini's model is in the path
// (the call builds it for the member's target), and an effort is a thinking
// budget the pool does not map.
func (GeminiFlavour) RewriteBody(ci *CallInfo, target, effort string) ([]byte, error) {
	return ci.raw, nil
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
			if p.Text != "" || nonEmptyJSON(p.FunctionCall) {
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

func (a *geminiAnswer) usage() (Usage, bool) {
	m := a.UsageMetadata
	if m == nil {
		return Usage{}, false
	}
	return Usage{Input: max(0, m.Prompt-m.Cached), CacheRead: m.Cached, Output: m.Output + m.Thought}, true
}

// InspectBody accepts a GenerateContentResponse with a candidate holding
// content; a countTokens answer only has to be a JSON object.
func (GeminiFlavour) InspectBody(ep Endpoint, body []byte) (Usage, string, string) {
	var a geminiAnswer
	if json.Unmarshal(body, &a) != nil {
		return Usage{}, config.ClassServer, "answer is not a JSON object"
	}
	if nonEmptyJSON(a.Error) {
		_, msg := GeminiFlavour{}.ParseError(body)
		return Usage{}, config.ClassServer, "answer carries an error: " + Clip(msg)
	}
	if ep.Kind != EpGenerate {
		return Usage{}, "", ""
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

func (GeminiFlavour) ParseError(body []byte) (string, string) {
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

func (GeminiFlavour) ErrorBody(status int, msg string, attempts []Attempt) []byte {
	type errObj struct {
		Code     int       `json:"code"`
		Message  string    `json:"message"`
		Status   string    `json:"status"`
		Attempts []Attempt `json:"attempts,omitempty"`
	}
	b, _ := json.Marshal(struct {
		Error errObj `json:"error"`
	}{errObj{Code: status, Message: msg, Status: geminiStatus(status), Attempts: attempts}})
	return b
}

// ErrorEvent is a data event holding the error document (what the Gemini
// API sends when a stream fails).
func (f GeminiFlavour) ErrorEvent(status int, msg string) []byte {
	return []byte(fmt.Sprintf("data: %s\n\n", f.ErrorBody(status, msg, nil)))
}

// PingEvent is an SSE comment, which SSE parsers skip.
func (GeminiFlavour) PingEvent() []byte { return openaiPing }

func (GeminiFlavour) NewWatcher() StreamWatcher { return &geminiWatcher{} }

// geminiWatcher follows a streamGenerateContent stream: each event is a
// whole GenerateContentResponse; the chunk with a finishReason is the last
// (the stream then ends at EOF).
type geminiWatcher struct {
	u    Usage
	done bool
	sigs []string // thought signature keys (SPEC POOL-18, signatures.go)
}

func (w *geminiWatcher) Observe(ev *SSEEvent, committed bool) Observation {
	if ev.Comment {
		return Observation{Verdict: VPreamble}
	}
	var a geminiAnswer
	if json.Unmarshal(ev.Data, &a) != nil {
		if code, status, msg := parseGeminiError(ev.Data); status != "" || msg != "" {
			return geminiErrObs(code, status, msg)
		}
		return Observation{Verdict: VPreamble}
	}
	if nonEmptyJSON(a.Error) {
		return geminiErrObs(parseGeminiError(ev.Data))
	}
	if u, ok := a.usage(); ok {
		w.u = u
	}
	w.sigs = append(w.sigs, geminiSigKeys(ev.Data)...)
	visible, fin := a.visible(), a.finished()
	if fin {
		w.done = true
	}
	switch {
	case visible && !committed:
		return Observation{Verdict: VVisible} // the stream's end follows at EOF (EndedCleanly)
	case fin:
		return Observation{Verdict: VEnd}
	case visible:
		return Observation{Verdict: VVisible}
	}
	return Observation{Verdict: VPreamble}
}

func geminiErrObs(code int, status, msg string) Observation {
	st := code
	if st < 400 || st > 599 {
		st = map[string]int{"INVALID_ARGUMENT": 400, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "NOT_FOUND": 404,
			"RESOURCE_EXHAUSTED": 429, "UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504}[status]
		if st == 0 {
			st = 500
		}
	}
	return Observation{Verdict: VError, ErrStatus: st, ErrType: status, ErrMsg: msg}
}

func (w *geminiWatcher) Usage() Usage { return w.u }

// EndedCleanly: an EOF after the finishReason chunk is Gemini's normal end.
func (w *geminiWatcher) EndedCleanly() bool { return w.done }
