package api

import (
	"bytes"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

func TestDecodeError(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   neutral.Error
	}{
		{"POOL-21/error-decode/anthropic", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, neutral.Error{Status: 529, Type: "overloaded_error", Message: "Overloaded"}},
		{"POOL-21/error-decode/openai-code-wins", 429, `{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`, neutral.Error{Status: 429, Type: "insufficient_quota", Message: "quota"}},
		{"POOL-21/error-decode/gemini-status", 400, `{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`, neutral.Error{Status: 400, Type: "INVALID_ARGUMENT", Message: "bad"}},
		{"POOL-21/error-decode/gemini-array-in-stream", 0, `[{"error":{"code":503,"message":"later","status":"UNAVAILABLE"}}]`, neutral.Error{Status: 503, Type: "UNAVAILABLE", Message: "later"}},
		{"POOL-21/error-decode/in-stream-status-from-type", 0, `{"type":"error","error":{"type":"rate_limit_error","message":"x"}}`, neutral.Error{Status: 429, Type: "rate_limit_error", Message: "x"}},
		{"POOL-21/error-decode/not-an-error-document", 502, `<html>bad gateway</html>`, neutral.Error{Status: 502}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := neutral.DecodeError(c.status, []byte(c.body)); got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestEncodeError(t *testing.T) {
	e := neutral.Error{Status: 529, Type: "overloaded_error", Message: "Overloaded"}
	cases := []struct {
		name   string
		api    apikind.Kind
		e      neutral.Error
		status int
		body   string
	}{
		{"POOL-21/error-encode/anthropic-keeps-529", apikind.Anthropic, e, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{"POOL-21/error-encode/chat-529-is-503", apikind.Chat, e, 503, `{"error":{"message":"Overloaded","type":"server_error","param":null,"code":"overloaded_error"}}`},
		{"POOL-21/error-encode/responses-429", apikind.Responses, neutral.Error{Status: 429, Type: "rate_limit_error", Message: "slow"}, 429, `{"error":{"message":"slow","type":"rate_limit_exceeded","param":null,"code":"rate_limit_error"}}`},
		{"POOL-21/error-encode/gemini-400", apikind.Gemini, neutral.Error{Status: 400, Type: "invalid_request_error", Message: "messages.0: bad"}, 400, `{"error":{"code":400,"message":"messages.0: bad","status":"INVALID_ARGUMENT"}}`},
		{"POOL-21/error-encode/gemini-529-is-503", apikind.Gemini, e, 503, `{"error":{"code":503,"message":"Overloaded","status":"UNAVAILABLE"}}`},
		{"POOL-21/error-encode/anthropic-401", apikind.Anthropic, neutral.Error{Status: 401, Message: "no"}, 401, `{"type":"error","error":{"type":"authentication_error","message":"no"}}`},
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
