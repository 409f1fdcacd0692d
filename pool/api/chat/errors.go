package chat

import (
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// EncodeOpenAIError is EncodeError for Chat Completions and Responses,
// which have no 529.
func EncodeOpenAIError(e neutral.Error) (int, []byte) {
	st := e.StatusOrDefault()
	if st == 529 {
		st = 503
	}
	return st, openAIErrorBody(st, e)
}

func openAIErrorBody(status int, e neutral.Error) []byte {
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
	return wirefmt.MustJSON(map[string]any{"error": map[string]any{"message": e.Message, "type": typ, "param": nil, "code": code}})
}

// openAITypeByStatus is the OpenAI error type word per HTTP status.
var openAITypeByStatus = map[int]string{
	400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
	404: "not_found_error", 413: "invalid_request_error", 429: "rate_limit_exceeded",
}
