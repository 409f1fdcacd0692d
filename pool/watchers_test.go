package pool

import (
	"testing"
)

func TestOpenAIWatchers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fl       flavour
		ev, data string
		want     verdict
	}{
		{"POOL-7/chat-role-only-preamble", chatFlavour{}, "", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, vPreamble},
		{"POOL-7/chat-content-visible", chatFlavour{}, "", `{"choices":[{"index":0,"delta":{"content":"h"}}]}`, vVisible},
		{"POOL-7/chat-reasoning-content-visible", chatFlavour{}, "", `{"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}`, vVisible},
		{"POOL-7/chat-tool-calls-visible", chatFlavour{}, "", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]}}]}`, vVisible},
		{"POOL-7/chat-usage-only-preamble", chatFlavour{}, "", `{"choices":[],"usage":{"prompt_tokens":3}}`, vPreamble},
		{"POOL-7/chat-done-end", chatFlavour{}, "", `[DONE]`, vEnd},
		{"POOL-7/chat-error-chunk", chatFlavour{}, "", `{"error":{"message":"x","type":"server_error"}}`, vError},
		{"POOL-7/chat-error-event", chatFlavour{}, "error", `{"message":"x","code":429}`, vError},
		{"POOL-7/responses-created-preamble", responsesFlavour{}, "response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"r"}}`, vPreamble},
		{"POOL-7/responses-message-item-preamble", responsesFlavour{}, "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"message","content":[]}}`, vPreamble},
		{"POOL-7/responses-reasoning-item-preamble", responsesFlavour{}, "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"reasoning","summary":[]}}`, vPreamble},
		{"POOL-7/responses-function-call-visible", responsesFlavour{}, "response.output_item.added", `{"type":"response.output_item.added","item":{"type":"function_call","name":"f"}}`, vVisible},
		{"POOL-7/responses-empty-delta-preamble", responsesFlavour{}, "response.output_text.delta", `{"type":"response.output_text.delta","delta":""}`, vPreamble},
		{"POOL-7/responses-text-delta-visible", responsesFlavour{}, "response.output_text.delta", `{"type":"response.output_text.delta","delta":"h"}`, vVisible},
		{"POOL-7/responses-summary-delta-visible", responsesFlavour{}, "", `{"type":"response.reasoning_summary_text.delta","delta":"t"}`, vVisible},
		{"POOL-7/responses-args-delta-visible", responsesFlavour{}, "response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","delta":"{"}`, vVisible},
		{"POOL-7/responses-text-done-without-deltas-visible", responsesFlavour{}, "response.output_text.done", `{"type":"response.output_text.done","text":"ok"}`, vVisible},
		{"POOL-7/responses-completed-end", responsesFlavour{}, "response.completed", `{"type":"response.completed","response":{"usage":{"input_tokens":1}}}`, vEnd},
		{"POOL-7/responses-incomplete-end", responsesFlavour{}, "response.incomplete", `{"type":"response.incomplete","response":{}}`, vEnd},
		{"POOL-7/responses-failed-error", responsesFlavour{}, "response.failed", `{"type":"response.failed","response":{"error":{"code":"server_error","message":"x"}}}`, vError},
		{"POOL-7/responses-error-event", responsesFlavour{}, "error", `{"type":"error","code":"rate_limit_exceeded","message":"x"}`, vError},
		{"POOL-7/comment-preamble", responsesFlavour{}, "", ``, vPreamble},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &sseEvent{Name: tc.ev, Data: []byte(tc.data), Comment: tc.data == ""}
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

func TestUpstreamURL(t *testing.T) {
	for _, tc := range []struct{ base, path, want string }{
		{"https://api.anthropic.com", "/v1/messages", "https://api.anthropic.com/v1/messages"},
		{"https://api.openai.com/v1", "/v1/responses", "https://api.openai.com/v1/responses"},
		{"https://open.example.cn/api/paas/v4/", "/v1/chat/completions", "https://open.example.cn/api/paas/v4/chat/completions"},
		{"http://127.0.0.1:8080/anthropic", "/v1/messages", "http://127.0.0.1:8080/anthropic/v1/messages"},
		{"http://127.0.0.1:8080/vx", "/v1/messages", "http://127.0.0.1:8080/vx/v1/messages"},
	} {
		t.Run("POOL-1/"+tc.base, func(t *testing.T) {
			if got := upstreamURL(tc.base, tc.path); got != tc.want {
				t.Fatalf("got %s", got)
			}
		})
	}
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
		for _, fl := range []flavour{chatFlavour{}, responsesFlavour{}} {
			w := fl.NewWatcher()
			ev := &sseEvent{Name: name, Data: []byte(data)}
			w.Observe(ev, false)
			if got := w.Observe(ev, true); got.Verdict == vVisible {
				t.Fatalf("visible after commit: %q", data)
			}
			_ = w.Usage()
			if ee, ok := w.(errorEventer); ok && len(ee.ErrorEvent(500, data)) == 0 {
				t.Fatal("empty error event")
			}
			fl.ParseError([]byte(data))
			fl.InspectBody(endpoint{Kind: epGenerate}, []byte(data))
		}
	})
}
