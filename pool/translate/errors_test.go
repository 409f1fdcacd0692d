package translate

import (
	"bytes"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

func TestDecodeError(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   Error
	}{
		{"POOL-21/error-decode/anthropic", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, Error{529, "overloaded_error", "Overloaded"}},
		{"POOL-21/error-decode/openai-code-wins", 429, `{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`, Error{429, "insufficient_quota", "quota"}},
		{"POOL-21/error-decode/gemini-status", 400, `{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`, Error{400, "INVALID_ARGUMENT", "bad"}},
		{"POOL-21/error-decode/gemini-array-in-stream", 0, `[{"error":{"code":503,"message":"later","status":"UNAVAILABLE"}}]`, Error{503, "UNAVAILABLE", "later"}},
		{"POOL-21/error-decode/in-stream-status-from-type", 0, `{"type":"error","error":{"type":"rate_limit_error","message":"x"}}`, Error{429, "rate_limit_error", "x"}},
		{"POOL-21/error-decode/not-an-error-document", 502, `<html>bad gateway</html>`, Error{Status: 502}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := DecodeError(c.status, []byte(c.body)); got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestEncodeError(t *testing.T) {
	e := Error{Status: 529, Type: "overloaded_error", Message: "Overloaded"}
	cases := []struct {
		name   string
		api    apikind.Kind
		e      Error
		status int
		body   string
	}{
		{"POOL-21/error-encode/anthropic-keeps-529", apikind.Anthropic, e, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{"POOL-21/error-encode/chat-529-is-503", apikind.Chat, e, 503, `{"error":{"message":"Overloaded","type":"server_error","param":null,"code":"overloaded_error"}}`},
		{"POOL-21/error-encode/responses-429", apikind.Responses, Error{429, "rate_limit_error", "slow"}, 429, `{"error":{"message":"slow","type":"rate_limit_exceeded","param":null,"code":"rate_limit_error"}}`},
		{"POOL-21/error-encode/gemini-400", apikind.Gemini, Error{400, "invalid_request_error", "messages.0: bad"}, 400, `{"error":{"code":400,"message":"messages.0: bad","status":"INVALID_ARGUMENT"}}`},
		{"POOL-21/error-encode/gemini-529-is-503", apikind.Gemini, e, 503, `{"error":{"code":503,"message":"Overloaded","status":"UNAVAILABLE"}}`},
		{"POOL-21/error-encode/anthropic-401", apikind.Anthropic, Error{Status: 401, Message: "no"}, 401, `{"type":"error","error":{"type":"authentication_error","message":"no"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, body := EncodeError(c.api, c.e)
			if st != c.status || normalize(t, body) != normalize(t, []byte(c.body)) {
				t.Fatalf("got %d %s, want %d %s", st, body, c.status, c.body)
			}
		})
	}
	t.Run("POOL-21/error-event/each-api", func(t *testing.T) {
		for api, prefix := range map[apikind.Kind]string{apikind.Anthropic: "event: error\n", apikind.Chat: `data: {"error"`, apikind.Responses: "event: error\n", apikind.Gemini: `data: {"error"`} {
			if b := ErrorEvent(api, e); !bytes.HasPrefix(b, []byte(prefix)) || !bytes.HasSuffix(b, []byte("\n\n")) {
				t.Errorf("%s: %q", api, b)
			}
		}
	})
}
