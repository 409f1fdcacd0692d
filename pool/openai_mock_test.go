package pool

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// chatChunk writes one Chat Completions chunk with the given delta.
func chatChunk(w http.ResponseWriter, who string, delta map[string]any, finish any) {
	sseData(w, map[string]any{"id": "chatcmpl-" + who, "object": "chat.completion.chunk", "model": "x",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
}

// sseData writes one "data:" event and flushes.
func sseData(w http.ResponseWriter, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "data: %s\n\n", b)
	w.(http.Flusher).Flush()
}

func chatDone(w http.ResponseWriter) {
	fmt.Fprint(w, "data: [DONE]\n\n")
	w.(http.Flusher).Flush()
}

// chatOK answers like a healthy OpenAI-compatible chat channel named who,
// streamed (role chunk, content, finish, usage, [DONE]) or not.
func chatOK(who string) behaviour {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(recordedBody(r), &body)
		if strings.HasSuffix(r.URL.Path, "/responses") {
			respOK(who)(w, r, 0)
			return
		}
		if !body.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"chatcmpl-%s","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi from %s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":40,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":30}}}`, who, who)
			return
		}
		sseHead(w)
		chatChunk(w, who, map[string]any{"role": "assistant", "content": ""}, nil)
		chatChunk(w, who, map[string]any{"content": "hi from " + who}, nil)
		chatChunk(w, who, map[string]any{}, "stop")
		sseData(w, map[string]any{"id": "chatcmpl-" + who, "object": "chat.completion.chunk", "choices": []any{},
			"usage": map[string]any{"prompt_tokens": 40, "completion_tokens": 3, "prompt_tokens_details": map[string]any{"cached_tokens": 30}}})
		chatDone(w)
	}
}

// respWriter writes Responses events with increasing sequence numbers.
type respWriter struct {
	w   http.ResponseWriter
	seq int
	who string
}

func (rw *respWriter) ev(name string, data map[string]any) {
	data["type"] = name
	data["sequence_number"] = rw.seq
	rw.seq++
	sseWrite(rw.w, name, data)
}

func (rw *respWriter) response(status string) map[string]any {
	return map[string]any{"id": "resp_" + rw.who, "object": "response", "created_at": 1700000000, "status": status, "model": "x", "output": []any{}}
}

// preamble writes response.created, in_progress, a message item and an
// empty content part: no visible output.
func (rw *respWriter) preamble() {
	rw.ev("response.created", map[string]any{"response": rw.response("in_progress")})
	rw.ev("response.in_progress", map[string]any{"response": rw.response("in_progress")})
	rw.ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{"id": "msg_" + rw.who, "type": "message", "role": "assistant", "content": []any{}}})
	rw.ev("response.content_part.added", map[string]any{"item_id": "msg_" + rw.who, "output_index": 0, "content_index": 0, "part": map[string]any{"type": "output_text", "text": ""}})
}

func (rw *respWriter) delta(text string) {
	rw.ev("response.output_text.delta", map[string]any{"item_id": "msg_" + rw.who, "output_index": 0, "content_index": 0, "delta": text})
}

func (rw *respWriter) completed(text string) {
	rw.ev("response.output_text.done", map[string]any{"item_id": "msg_" + rw.who, "output_index": 0, "content_index": 0, "text": text})
	resp := rw.response("completed")
	resp["output"] = []any{map[string]any{"id": "msg_" + rw.who, "type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": text}}}}
	resp["usage"] = map[string]any{"input_tokens": 50, "output_tokens": 2, "input_tokens_details": map[string]any{"cached_tokens": 40}}
	rw.ev("response.completed", map[string]any{"response": resp})
}

// respOK answers like a healthy Responses channel named who.
func respOK(who string) behaviour {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		var body struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(recordedBody(r), &body)
		if !body.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"resp_%s","object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi from %s"}]}],"usage":{"input_tokens":50,"output_tokens":2,"input_tokens_details":{"cached_tokens":40}}}`, who, who)
			return
		}
		sseHead(w)
		rw := &respWriter{w: w, who: who}
		rw.preamble()
		rw.delta("hi from " + who)
		rw.completed("hi from " + who)
	}
}

// sseBlocks splits an SSE body into its events' data payloads with their
// event names ("" for data-only events), independent of wire/sse.go.
type block struct{ name, data string }

func sseBlocks(body string) []block {
	var out []block
	for _, b := range strings.Split(body, "\n\n") {
		var bl block
		hasField := false
		for _, line := range strings.Split(b, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				bl.name, hasField = v, true
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				bl.data, hasField = v, true
			}
		}
		if hasField {
			out = append(out, bl)
		}
	}
	return out
}

// callAPI posts body to the pool path with headers and returns the response
// and its whole body.
func (w *world) callAPI(path string, hdr map[string]string, body string) (*http.Response, string) {
	w.t.Helper()
	resp := w.do(w.t.Context(), path, hdr, body)
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, sb.String()
}

func chatBody(model string, stream bool, extra string) string {
	return fmt.Sprintf(`{"model": %q, "stream": %v, %s"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "say ok"}]}`, model, stream, extra)
}

func respBody(model string, stream bool, extra string) string {
	return fmt.Sprintf(`{"model": %q, "stream": %v, %s"instructions": "be brief", "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "say ok"}]}]}`, model, stream, extra)
}
