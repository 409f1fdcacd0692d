package wirefmt

import (
	"testing"
)

// TestAnswerModel: the answer documents and events of every API name the
// unified model id the client asked for, not the member's (SPEC POOL-2);
// everything else stays byte for byte.
func TestAnswerModel(t *testing.T) {
	val := ModelValue("fast")
	for _, tc := range []struct{ name, in, want string }{
		{"anthropic-message", `{"id":"m","type":"message","model":"mock-b-model","content":[]}`, `{"id":"m","type":"message","model":"fast","content":[]}`},
		{"anthropic-message-start", `{"type":"message_start","message":{"id":"m","model":"mock-b-model","usage":{"input_tokens":3}}}`, `{"type":"message_start","message":{"id":"m","model":"fast","usage":{"input_tokens":3}}}`},
		{"chat-chunk", `{"id":"c","object":"chat.completion.chunk","model": "gpt-x","choices":[]}`, `{"id":"c","object":"chat.completion.chunk","model": "fast","choices":[]}`},
		{"responses-event", `{"type":"response.created","response":{"id":"r","model":"gpt-x","output":[]}}`, `{"type":"response.created","response":{"id":"r","model":"fast","output":[]}}`},
		{"gemini", `{"candidates":[],"modelVersion":"gemini-2.5-flash"}`, `{"candidates":[],"modelVersion":"fast"}`},
		{"no-model", `{"type":"content_block_delta","delta":{"text":"the model said"}}`, `{"type":"content_block_delta","delta":{"text":"the model said"}}`},
		{"model-in-content-untouched", `{"type":"content_block_delta","delta":{"text":"\"model\":\"x\""}}`, `{"type":"content_block_delta","delta":{"text":"\"model\":\"x\""}}`},
		{"not-an-object", `[DONE]`, `[DONE]`},
	} {
		t.Run("POOL-2/answer-names-the-unified-model/"+tc.name, func(t *testing.T) {
			if got := string(AnswerModel([]byte(tc.in), val)); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	t.Run("POOL-2/events-keep-their-framing", func(t *testing.T) {
		in := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m-b\"}}\n\nid: 7\r\ndata:{\"model\":\"m-b\"}\r\n\r\n: ping\n\ndata: [DONE]\n\n"
		want := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"fast\"}}\n\nid: 7\r\ndata:{\"model\":\"fast\"}\r\n\r\n: ping\n\ndata: [DONE]\n\n"
		if got := string(EventsModel([]byte(in), val)); got != want {
			t.Fatalf("got  %q\nwant %q", got, want)
		}
		same := []byte("event: ping\ndata: {\"type\":\"ping\"}\n\n")
		if got := EventsModel(same, val); &got[0] != &same[0] {
			t.Fatal("an event without a model was copied")
		}
	})
}

// FuzzEventsModel: whatever an upstream sends, the rewrite keeps every
// line that is not a data line with a model, and never panics.
func FuzzEventsModel(f *testing.F) {
	f.Add([]byte("data: {\"model\":\"a\"}\n\n"), "fast")
	f.Add([]byte("data:{\"message\":{\"model\":\"a\"},\"model\":\"b\"}\r\n"), "x\"y")
	f.Fuzz(func(t *testing.T, raw []byte, model string) {
		out := EventsModel(raw, ModelValue(model))
		if countLines(out) != countLines(raw) {
			t.Fatalf("line count changed: %q -> %q", raw, out)
		}
	})
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}
