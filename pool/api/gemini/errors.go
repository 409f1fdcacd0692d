package gemini

import (
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// encodeGeminiError is EncodeError for Gemini, which has no 529.
func encodeGeminiError(e neutral.Error) (int, []byte) {
	st := e.StatusOrDefault()
	if st == 529 {
		st = 503
	}
	return st, geminiErrorBody(st, e.Message)
}

func geminiErrorBody(status int, msg string) []byte {
	st, ok := geminiStatusByHTTP[status]
	if !ok {
		st = "INTERNAL"
		if status < 500 {
			st = "INVALID_ARGUMENT"
		}
	}
	return wirefmt.MustJSON(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}})
}

// geminiStatusByHTTP is the google.rpc.Code name per HTTP status.
var geminiStatusByHTTP = map[int]string{
	400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
	404: "NOT_FOUND", 409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED",
	500: "INTERNAL", 501: "UNIMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}
