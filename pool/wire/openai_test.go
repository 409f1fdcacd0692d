package wire

import (
	"testing"
)

func TestOpenAIWatchers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fl       Flavour
		ev, data string
		want     Verdict
	}{
		{"POOL-7/chat-role-only-preamble", ChatFlavour{}, "", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, VPreamble},
		{"POOL-7/chat-content-visible", ChatFlavour{}, "", `{"choices":[{"index":0,"delta":{"content":"h"}}]}`, VVisible},
		{"POOL-7/chat-reasoning-content-visible", ChatFlavour{}, "", `{"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}`, VVisible},
		{"POOL-7/chat-tool-calls-visible", ChatFlavour{}, "", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]}}]}`, VVisible},
		{"POOL-7/chat-usage-only-preamble", ChatFlavour{}, "", `{"choices":[],"usage":{"prompt_tokens":3}}`, VPreamble},
		{"POOL-7/chat-done-end", ChatFlavour{}, "", `[DONE]`, VEnd},
		{"POOL-7/chat-error-chunk", ChatFlavour{}, "", `{"error":{"message":"x","type":"server_error"}}`, VError},
		{"POOL-7/chat-error-event", ChatFlavour{}, "error", `{"message":"x","code":429}`, VError},
		{"POOL-7/responses-created-preamble", ResponsesFlavour{}, "response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"r"}}`, VPreamble},
		{"POOL-7/responses-message-item-preamble", ResponsesFlavour{}, "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"message","content":[]}}`, VPreamble},
		{"POOL-7/responses-reasoning-item-preamble", ResponsesFlavour{}, "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"reasoning","summary":[]}}`, VPreamble},
		{"POOL-7/responses-function-call-visible", ResponsesFlavour{}, "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"function_call","name":"f"}}`, VVisible},
		{"POOL-7/responses-empty-delta-preamble", ResponsesFlavour{}, "response.output_text.delta", `{"type":"response.output_text.delta","delta":""}`, VPreamble},
		{"POOL-7/responses-text-delta-visible", ResponsesFlavour{}, "response.output_text.delta", `{"type":"response.output_text.delta","delta":"h"}`, VVisible},
		{"POOL-7/responses-summary-delta-visible", ResponsesFlavour{}, "", `{"type":"response.reasoning_summary_text.delta","delta":"t"}`, VVisible},
		{"POOL-7/responses-args-delta-visible", ResponsesFlavour{}, "response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","delta":"{"}`, VVisible},
		{"POOL-7/responses-text-done-without-deltas-visible", ResponsesFlavour{}, "response.output_text.done", `{"type":"response.output_text.done","text":"ok"}`, VVisible},
		{"POOL-7/responses-completed-end", ResponsesFlavour{}, "response.completed", `{"type":"response.completed","response":{"usage":{"input_tokens":1}}}`, VEnd},
		{"POOL-7/responses-incomplete-end", ResponsesFlavour{}, "response.incomplete", `{"type":"response.incomplete","response":{}}`, VEnd},
		{"POOL-7/responses-failed-error", ResponsesFlavour{}, "response.failed", `{"type":"response.failed","response":{"error":{"code":"server_error","message":"x"}}}`, VError},
		{"POOL-7/responses-error-event", ResponsesFlavour{}, "error", `{"type":"error","code":"rate_limit_exceeded","message":"x"}`, VError},
		{"POOL-7/comment-preamble", ResponsesFlavour{}, "", ``, VPreamble},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &SSEEvent{Name: tc.ev, Data: []byte(tc.data), Comment: tc.data == ""}
			if got := tc.fl.NewWatcher().Observe(ev, false); got.Verdict != tc.want {
				t.Fatalf("got %v want %v", got.Verdict, tc.want)
			}
		})
	}
	t.Run("POOL-10/in-stream-error-status", func(t *testing.T) {
		for typ, want := range map[string]int{"rate_limit_exceeded": 429, "insufficient_quota": 429, "server_error": 500,
			"invalid_request_error context_length_exceeded": 400, "invalid_request_error model_not_found": 404, "": 500} {
			if got := openaiStatus(typ, 0); got != want {
				t.Errorf("%q → %d want %d", typ, got, want)
			}
		}
		if openaiStatus("server_error", 503) != 503 {
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
		for _, fl := range []Flavour{ChatFlavour{}, ResponsesFlavour{}} {
			w := fl.NewWatcher()
			ev := &SSEEvent{Name: name, Data: []byte(data)}
			w.Observe(ev, false)
			if got := w.Observe(ev, true); got.Verdict == VVisible {
				t.Fatalf("visible after commit: %q", data)
			}
			_ = w.Usage()
			if ee, ok := w.(ErrorEventer); ok && len(ee.ErrorEvent(500, data)) == 0 {
				t.Fatal("empty error event")
			}
			fl.ParseError([]byte(data))
			fl.InspectBody(Endpoint{Kind: EpGenerate}, []byte(data))
		}
	})
}
