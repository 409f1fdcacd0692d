package translate

import (
	"encoding/json"
	"strconv"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// errorDoc is the union of the four APIs' error documents:
//
//	Anthropic  {"type":"error","error":{"type","message"}}
//	OpenAI     {"error":{"message","type","param","code"}}   (Chat and Responses)
//	Gemini     {"error":{"code":400,"message","status":"INVALID_ARGUMENT"}}
//
// Gemini streams may wrap it in an array: [{"error":…}].
type errorDoc struct {
	Error *struct {
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
		Status  string          `json:"status"`
	} `json:"error"`
}

// DecodeError reads an upstream error document of any of the four APIs
// (they are told apart by their fields) with HTTP status status (0 for an
// in-stream error: the status is then derived from the type or code). A body
// that is no error document gives Type "" and the status.
func DecodeError(status int, body []byte) Error {
	e := Error{Status: status}
	var d errorDoc
	if json.Unmarshal(body, &d) != nil || d.Error == nil {
		var arr []errorDoc
		if json.Unmarshal(body, &arr) != nil || len(arr) == 0 || arr[0].Error == nil {
			return e
		}
		d = arr[0]
	}
	x := d.Error
	e.Message = x.Message
	var code string
	if len(x.Code) > 0 && x.Code[0] == '"' {
		_ = json.Unmarshal(x.Code, &code)
	}
	switch {
	case x.Status != "":
		e.Type = x.Status
	case code != "":
		e.Type = code
	default:
		e.Type = x.Type
	}
	if e.Status == 0 {
		if n, err := strconv.Atoi(string(x.Code)); err == nil && n >= 400 && n <= 599 {
			e.Status = n
		} else if s, ok := statusByType[e.Type]; ok {
			e.Status = s
		} else if s, ok := statusByType[x.Type]; ok {
			e.Status = s
		} else {
			e.Status = 500
		}
	}
	return e
}

// EncodeError renders e as api's error document and the HTTP status to
// send. Anthropic's 529 is sent as 503 to the other APIs, which have no 529.
func EncodeError(api apikind.Kind, e Error) (int, []byte) {
	switch api {
	case apikind.Anthropic:
		return encodeAnthropicError(e)
	case apikind.Gemini:
		return encodeGeminiError(e)
	}
	return encodeOpenAIError(e)
}

// encodeAnthropicError is EncodeError for Anthropic Messages.
func encodeAnthropicError(e Error) (int, []byte) { return e.statusOrDefault(), anErrorBody(e) }

// encodeGeminiError is EncodeError for Gemini, which has no 529.
func encodeGeminiError(e Error) (int, []byte) {
	st := e.statusOrDefault()
	if st == 529 {
		st = 503
	}
	return st, geminiErrorBody(st, e.Message)
}

// encodeOpenAIError is EncodeError for Chat Completions and Responses,
// which have no 529.
func encodeOpenAIError(e Error) (int, []byte) {
	st := e.statusOrDefault()
	if st == 529 {
		st = 503
	}
	return st, openAIErrorBody(st, e)
}

func anErrorBody(e Error) []byte {
	typ, ok := anthropicTypeByStatus[e.statusOrDefault()]
	if !ok {
		typ = "api_error"
		if e.statusOrDefault() < 500 {
			typ = "invalid_request_error"
		}
	}
	return mustJSON(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": e.Message}})
}

func openAIErrorBody(status int, e Error) []byte {
	typ, ok := openAITypeByStatus[status]
	if !ok {
		typ = "server_error"
		if status < 500 {
			typ = "invalid_request_error"
		}
	}
	var code any
	if e.Type != "" {
		code = e.Type
	}
	return mustJSON(map[string]any{"error": map[string]any{"message": e.Message, "type": typ, "param": nil, "code": code}})
}

func geminiErrorBody(status int, msg string) []byte {
	st, ok := geminiStatusByHTTP[status]
	if !ok {
		st = "INTERNAL"
		if status < 500 {
			st = "INVALID_ARGUMENT"
		}
	}
	return mustJSON(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}})
}

// ErrorEvent renders e as api's in-stream error (after the stream's head was
// sent): Anthropic "event: error"; Chat `data: {"error":…}`; Gemini a data
// event with the error document; Responses uses its encoder's own error
// event (it needs the stream's sequence numbers), so here it gets the
// "error" event with sequence number 0.
func ErrorEvent(api apikind.Kind, e Error) []byte {
	switch api {
	case apikind.Anthropic:
		return AnthropicErrorEvent(e)
	case apikind.Responses:
		return (&responsesStreamEncoder{}).errorEvents(e)
	}
	_, body := EncodeError(api, e)
	return sse("", body)
}
