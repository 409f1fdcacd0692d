package neutral

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// AnError is the error object of an Anthropic error document, the shape
// OpenAI-compatible servers copy.
type AnError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

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
		} else if s, ok := StatusByType[e.Type]; ok {
			e.Status = s
		} else if s, ok := StatusByType[x.Type]; ok {
			e.Status = s
		} else {
			e.Status = 500
		}
	}
	return e
}

// FieldError is a request (or answer) that cannot be expressed in the target
// API, or that is malformed. Field is the JSON path in the source document
// ("messages[2].content[0].type"). The pool answers it with a 400 naming the
// field, rather than dropping what it cannot say.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// FieldErr is a FieldError at field with a formatted reason.
func FieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Error is an API error in neutral form: the HTTP status (for an in-stream
// error, the status its type stands for), the upstream's type or code word
// and its message.
type Error struct {
	Status  int
	Type    string
	Message string
}

// StatusOrDefault returns e.Status, or 500 when it is not an error status.
func (e Error) StatusOrDefault() int {
	if e.Status < 400 || e.Status > 599 {
		return http.StatusInternalServerError
	}
	return e.Status
}

// StatusByType maps the error type and code words of all four APIs to an
// HTTP status, for in-stream errors that carry no status.
var StatusByType = map[string]int{
	"invalid_request_error": 400, "INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400,
	"context_length_exceeded": 400, "authentication_error": 401, "invalid_api_key": 401,
	"UNAUTHENTICATED": 401, "billing_error": 402, "permission_error": 403,
	"PERMISSION_DENIED": 403, "not_found_error": 404, "model_not_found": 404, "NOT_FOUND": 404,
	"request_too_large": 413, "rate_limit_error": 429, "rate_limit_exceeded": 429,
	"insufficient_quota": 429, "RESOURCE_EXHAUSTED": 429, "api_error": 500,
	"server_error": 500, "INTERNAL": 500, "UNAVAILABLE": 503, "timeout_error": 504,
	"DEADLINE_EXCEEDED": 504, "overloaded_error": 529,
}
