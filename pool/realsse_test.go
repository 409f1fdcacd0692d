package pool_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// rawStream answers with exactly these bytes as an event stream.
func rawStream(raw string) func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
	return func(w http.ResponseWriter, r *http.Request, _ int, _ []byte) {
		streamHead(w)
		io.WriteString(w, raw)
	}
}

const (
	aStart = `{"type":"message_start","message":{"id":"msg_a","type":"message","role":"assistant","content":[],"usage":{"input_tokens":10,"output_tokens":0}}}`
	aDelta = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello"}}`
	aStop  = `{"type":"message_stop"}`
	cRole  = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant"}}]}`
	cText  = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}`
	cStop  = `{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
)

// TestSSEFraming: every framing the SSE grammar allows (WHATWG HTML §9.2.6:
// CRLF, LF or CR line ends; comments; multi-line data; "data:" with no
// space; dispatch at EOF without a final blank line) ends cleanly, with no
// error added by the pool (SPEC POOL-19).
func TestSSEFraming(t *testing.T) {
	anth := func(sep, eof string) string {
		return "event: message_start" + sep + "data: " + aStart + sep + sep +
			"event: content_block_delta" + sep + "data: " + aDelta + sep + sep +
			"event: message_stop" + sep + "data: " + aStop + eof
	}
	chat := func(sep, eof string) string {
		return "data: " + cRole + sep + sep + "data: " + cText + sep + sep + "data: " + cStop + sep + sep + "data: [DONE]" + eof
	}
	cases := []struct {
		name, api, raw string
	}{
		{"anthropic-lf", "anthropic", anth("\n", "\n\n")},
		{"anthropic-crlf", "anthropic", anth("\r\n", "\r\n\r\n")},
		{"anthropic-bare-cr", "anthropic", anth("\r", "\r\r")},
		{"anthropic-no-blank-line-at-eof", "anthropic", anth("\n", "\n")},
		{"anthropic-no-line-end-at-eof", "anthropic", anth("\n", "")},
		{"anthropic-crlf-no-blank-line-at-eof", "anthropic", anth("\r\n", "\r\n")},
		{"anthropic-comments", "anthropic", ": hello\n\n" + strings.ReplaceAll(anth("\n", "\n\n"), "event: message_stop", ": keep-alive\nevent: message_stop")},
		{"anthropic-data-without-space", "anthropic", strings.ReplaceAll(anth("\n", "\n\n"), "data: ", "data:")},
		{"anthropic-multi-line-data", "anthropic", "event: message_start\ndata: " + aStart + "\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\ndata: \"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hello\"}}\n\nevent: message_stop\ndata: " + aStop + "\n\n"},
		{"chat-lf", "openai", chat("\n", "\n\n")},
		{"chat-crlf", "openai", chat("\r\n", "\r\n\r\n")},
		{"chat-bare-cr", "openai", chat("\r", "\r\r")},
		{"chat-done-without-line-end", "openai", chat("\n", "")},
		{"chat-done-without-blank-line", "openai", chat("\n", "\n")},
		{"chat-no-done-after-finish", "openai", "data: " + cRole + "\n\ndata: " + cText + "\n\ndata: " + cStop + "\n"},
		{"chat-data-without-space", "openai", strings.ReplaceAll(chat("\n", "\n\n"), "data: ", "data:")},
	}
	for _, tc := range cases {
		t.Run("POOL-19/"+tc.name, func(t *testing.T) {
			w := newRWorld(t, rconf{api: tc.api}, []string{"a"}, rawStream(tc.raw))
			path, body := "/pool/p/v1/messages", anthropicBody(true)
			if tc.api == "openai" {
				path, body = "/pool/p/v1/chat/completions", chatBody(true)
			}
			resp, got := w.do(path, "s1", body)
			if resp.StatusCode != 200 || !strings.Contains(got, "hello") {
				t.Fatalf("status %d body %q", resp.StatusCode, got)
			}
			if strings.Contains(got, `"error"`) || strings.Contains(got, "event: error") {
				t.Fatalf("the pool added an error to a stream that ended properly: %q", got)
			}
			if m := w.member("a"); m.Failures != 0 || m.Successes != 1 {
				t.Fatalf("a: %+v", m)
			}
		})
	}
}

// TestResponsesFailureReason: an error event after response.failed (and the
// reason inside response.failed) reaches the client, and the pool adds no
// error of its own after a stream that ended with its own failure event
// (SPEC POOL-19).
func TestResponsesFailureReason(t *testing.T) {
	const created = `{"type":"response.created","sequence_number":0,"response":{"id":"resp_a","object":"response","status":"in_progress","output":[]}}`
	const delta = `{"type":"response.output_text.delta","sequence_number":1,"item_id":"m1","output_index":0,"content_index":0,"delta":"hel"}`
	cases := []struct{ name, raw, reason string }{
		{"failed-then-error", "event: response.created\ndata: " + created + "\n\nevent: response.output_text.delta\ndata: " + delta + "\n\n" +
			"event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_a\",\"status\":\"failed\",\"error\":null}}\n\n" +
			"event: error\ndata: {\"type\":\"error\",\"sequence_number\":3,\"code\":\"server_error\",\"message\":\"upstream overloaded: shard 7\"}\n\n", "upstream overloaded: shard 7"},
		{"incomplete-reason", "event: response.created\ndata: " + created + "\n\nevent: response.output_text.delta\ndata: " + delta + "\n\n" +
			"event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"sequence_number\":2,\"response\":{\"id\":\"resp_a\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"}}}\n\n", "max_output_tokens"},
	}
	for _, tc := range cases {
		t.Run("POOL-19/responses-"+tc.name, func(t *testing.T) {
			w := newRWorld(t, rconf{api: "openai"}, []string{"a"}, rawStream(tc.raw))
			resp, got := w.do("/pool/p/v1/responses", "s1", `{"model":"m","stream":true,"input":"hi"}`)
			if resp.StatusCode != 200 || !strings.Contains(got, tc.reason) {
				t.Fatalf("status %d: reason %q missing from %q", resp.StatusCode, tc.reason, got)
			}
			if strings.Count(got, "event: response.failed") > 1 || strings.Contains(got, "resp_pool_failed") {
				t.Fatalf("pool added its own failure: %q", got)
			}
		})
	}
}

// TestResponsesFailureReasonBeforeCommit: a response.failed without an error
// before the first output, then the reason as an error event: the member's
// attempt (and the aggregated error) carries the reason (SPEC POOL-19).
func TestResponsesFailureReasonBeforeCommit(t *testing.T) {
	t.Run("POOL-19/responses-failed-then-error-before-commit", func(t *testing.T) {
		raw := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_a\",\"status\":\"in_progress\",\"output\":[]}}\n\n" +
			"event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_a\",\"status\":\"failed\",\"error\":null}}\n\n" +
			"event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"code\":\"server_error\",\"message\":\"shard 7 is overloaded\"}\n\n"
		w := newRWorld(t, rconf{api: "openai"}, []string{"a"}, rawStream(raw))
		_, got := w.do("/pool/p/v1/responses", "s1", `{"model":"m","stream":true,"input":"hi"}`)
		if !strings.Contains(got, "shard 7 is overloaded") {
			t.Fatalf("the reason is lost: %s", got)
		}
	})
}
