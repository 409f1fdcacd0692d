package anthropic

import (
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// encodeAnthropicError is EncodeError for Anthropic Messages.
func encodeAnthropicError(e neutral.Error) (int, []byte) { return e.StatusOrDefault(), anErrorBody(e) }

func anErrorBody(e neutral.Error) []byte {
	typ, ok := anthropicTypeByStatus[e.StatusOrDefault()]
	if !ok {
		typ = "api_error"
		if e.StatusOrDefault() < 500 {
			typ = "invalid_request_error"
		}
	}
	return wirefmt.MustJSON(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": e.Message}})
}

// anthropicTypeByStatus is Anthropic's error type per HTTP status
// (docs.anthropic.com "Errors"); used for the other direction too.
var anthropicTypeByStatus = map[int]string{
	400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
	403: "permission_error", 404: "not_found_error", 413: "request_too_large",
	429: "rate_limit_error", 500: "api_error", 504: "timeout_error", 529: "overloaded_error",
}
