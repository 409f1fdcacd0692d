package api

import (
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/responses"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

func TestOpenAIWatchers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fl       Flavour
		ev, data string
		want     neutral.Verdict
	}{
		{"POOL-7/chat-role-only-preamble", chat.Flavour{}, "", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, neutral.VPreamble},
		{"POOL-7/chat-content-visible", chat.Flavour{}, "", `{"choices":[{"index":0,"delta":{"content":"h"}}]}`, neutral.VVisible},
		{"POOL-7/chat-reasoning-content-visible", chat.Flavour{}, "", `{"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}`, neutral.VVisible},
		{"POOL-7/chat-tool-calls-visible", chat.Flavour{}, "", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]}}]}`, neutral.VVisible},
		{"POOL-7/chat-usage-only-preamble", chat.Flavour{}, "", `{"choices":[],"usage":{"prompt_tokens":3}}`, neutral.VPreamble},
		{"POOL-7/chat-done-end", chat.Flavour{}, "", `[DONE]`, neutral.VEnd},
		{"POOL-7/chat-error-chunk", chat.Flavour{}, "", `{"error":{"message":"x","type":"server_error"}}`, neutral.VError},
		{"POOL-7/chat-error-event", chat.Flavour{}, "error", `{"message":"x","code":429}`, neutral.VError},
		{"POOL-7/responses-created-preamble", responses.Flavour{}, "response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"r"}}`, neutral.VPreamble},
		{"POOL-7/responses-message-item-preamble", responses.Flavour{}, "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"message","content":[]}}`, neutral.VPreamble},
		{"POOL-7/responses-reasoning-item-preamble", responses.Flavour{}, "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"reasoning","summary":[]}}`, neutral.VPreamble},
		{"POOL-7/responses-function-call-visible", responses.Flavour{}, "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"function_call","name":"f"}}`, neutral.VVisible},
		{"POOL-7/responses-empty-delta-preamble", responses.Flavour{}, "response.output_text.delta", `{"type":"response.output_text.delta","delta":""}`, neutral.VPreamble},
		{"POOL-7/responses-text-delta-visible", responses.Flavour{}, "response.output_text.delta", `{"type":"response.output_text.delta","delta":"h"}`, neutral.VVisible},
		{"POOL-7/responses-summary-delta-visible", responses.Flavour{}, "", `{"type":"response.reasoning_summary_text.delta","delta":"t"}`, neutral.VVisible},
		{"POOL-7/responses-args-delta-visible", responses.Flavour{}, "response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","delta":"{"}`, neutral.VVisible},
		{"POOL-7/responses-text-done-without-deltas-visible", responses.Flavour{}, "response.output_text.done", `{"type":"response.output_text.done","text":"ok"}`, neutral.VVisible},
		{"POOL-7/responses-completed-end", responses.Flavour{}, "response.completed", `{"type":"response.completed","response":{"usage":{"input_tokens":1}}}`, neutral.VEnd},
		{"POOL-7/responses-incomplete-end", responses.Flavour{}, "response.incomplete", `{"type":"response.incomplete","response":{}}`, neutral.VEnd},
		{"POOL-7/responses-failed-error", responses.Flavour{}, "response.failed", `{"type":"response.failed","response":{"error":{"code":"server_error","message":"x"}}}`, neutral.VError},
		{"POOL-7/responses-error-event", responses.Flavour{}, "error", `{"type":"error","code":"rate_limit_exceeded","message":"x"}`, neutral.VError},
		{"POOL-7/comment-preamble", responses.Flavour{}, "", ``, neutral.VPreamble},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &wirefmt.SSEEvent{Name: tc.ev, Data: []byte(tc.data), Comment: tc.data == ""}
			if got := tc.fl.NewWatcher().Observe(ev, false); got.Verdict != tc.want {
				t.Fatalf("got %v want %v", got.Verdict, tc.want)
			}
		})
	}
	t.Run("POOL-10/in-stream-error-status", func(t *testing.T) {
		for typ, want := range map[string]int{"rate_limit_exceeded": 429, "insufficient_quota": 429, "server_error": 500,
			"invalid_request_error context_length_exceeded": 400, "invalid_request_error model_not_found": 404, "": 500} {
			if got := chat.OpenaiStatus(typ, 0); got != want {
				t.Errorf("%q → %d want %d", typ, got, want)
			}
		}
		if chat.OpenaiStatus("server_error", 503) != 503 {
			t.Error("numeric code ignored")
		}
	})
}

// FuzzOpenAIWatchers: arbitrary event data never panics a watcher, and a
// committed stream is never "visible" again (no second commit point).
func FuzzOpenAIWatchers(f *testing.F) {
	for _, s := range []string{`[DONE]`, `{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}`,
		`{"error":"text"}`, `{"error":{"code":503}}`, `{"type":"response.completed","response":{"usage":null}}`,
		`{"type":"response.output_item.added","item":{"type":"x_call"}}`, `{"delta":{"a":1}}`, `null`, `"finish_reason": "`} {
		f.Add("", s)
		f.Add("error", s)
	}
	f.Fuzz(func(t *testing.T, name, data string) {
		for _, fl := range []Flavour{chat.Flavour{}, responses.Flavour{}} {
			w := fl.NewWatcher()
			ev := &wirefmt.SSEEvent{Name: name, Data: []byte(data)}
			w.Observe(ev, false)
			if got := w.Observe(ev, true); got.Verdict == neutral.VVisible {
				t.Fatalf("visible after commit: %q", data)
			}
			_ = w.Usage()
			if ee, ok := w.(neutral.ErrorEventer); ok && len(ee.ErrorEvent(500, data)) == 0 {
				t.Fatal("empty error event")
			}
			fl.ParseError([]byte(data))
			fl.InspectBody(neutral.Endpoint{Kind: neutral.EpGenerate}, []byte(data))
		}
	})
}
