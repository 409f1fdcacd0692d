package mockllm

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// answer renders one Turn in an API's wire form.
type answer struct {
	turn       Turn
	model      string
	usageAsked bool     // Chat: stream_options.include_usage
	sign       *signer  // the channel's signatures (strict.go); nil: fixed placeholders
	ids        []string // the tool calls' ids (Channel.toolIDs); nil: scripted or call_mock_N
}

// halves splits s into two pieces at a character boundary near the middle
// (stream deltas and argument fragments split mid-token).
func halves(s string) []string {
	if len(s) < 2 {
		return []string{s}
	}
	i := len(s) / 2
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return []string{s[:i], s[i:]}
}

func (a answer) callID(i int) string {
	if i < len(a.ids) {
		return a.ids[i]
	}
	if id := a.turn.ToolCalls[i].ID; id != "" {
		return id
	}
	return fmt.Sprintf("call_mock_%d", i+1)
}

func (a answer) args(i int) string {
	if s := a.turn.ToolCalls[i].Args; s != "" {
		return s
	}
	return "{}"
}

func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

// document is the non-streamed answer.
func (a answer) document(api string) any {
	t := a.turn
	switch api {
	case Anthropic:
		var content []any
		if t.Reasoning != "" {
			content = append(content, map[string]any{"type": "thinking", "thinking": t.Reasoning, "signature": a.sign.thinking(t.Reasoning)})
		}
		if t.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": t.Text})
		}
		for i, tc := range t.ToolCalls {
			content = append(content, map[string]any{"type": "tool_use", "id": a.callID(i), "name": tc.Name, "input": rawJSON(a.args(i))})
		}
		return map[string]any{"id": "msg_mock", "type": "message", "role": "assistant", "model": a.model, "content": content,
			"stop_reason": a.anStop(), "stop_sequence": nil, "usage": a.anUsage()}
	case Chat:
		msg := map[string]any{"role": "assistant", "content": nilIfEmpty(t.Text)}
		if t.Reasoning != "" {
			msg["reasoning_content"] = t.Reasoning
		}
		if len(t.ToolCalls) > 0 {
			var tcs []any
			for i, tc := range t.ToolCalls {
				tcs = append(tcs, map[string]any{"id": a.callID(i), "type": "function", "function": map[string]any{"name": tc.Name, "arguments": a.args(i)}})
			}
			msg["tool_calls"] = tcs
		}
		return map[string]any{"id": "chatcmpl-mock", "object": "chat.completion", "created": time.Now().Unix(), "model": a.model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": a.chatFinish()}}, "usage": a.chatUsage()}
	case Responses:
		return a.rsResponse("completed", a.rsItems())
	}
	var parts []any
	if t.Reasoning != "" {
		parts = append(parts, map[string]any{"text": t.Reasoning, "thought": true})
	}
	if t.Text != "" {
		parts = append(parts, map[string]any{"text": t.Text})
	}
	for i, tc := range t.ToolCalls {
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": tc.Name, "args": rawJSON(a.args(i))}})
	}
	if sig := a.geminiSignature(); sig != "" {
		// Gemini signs the first function call of a turn, else its last
		// part (Gemini API "Thought signatures").
		at := len(parts) - 1
		if len(t.ToolCalls) > 0 {
			at = len(parts) - len(t.ToolCalls)
		}
		parts[at].(map[string]any)["thoughtSignature"] = sig
	}
	return map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": a.gmUsage(), "modelVersion": a.model, "responseId": "mock-resp"}
}

// geminiSignature is the thoughtSignature of a Gemini answer: one when it
// thinks or calls a function, else "".
func (a answer) geminiSignature() string {
	if a.turn.Reasoning == "" && len(a.turn.ToolCalls) == 0 {
		return ""
	}
	return a.sign.token("thoughtSignature")
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (a answer) anStop() string {
	if len(a.turn.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func (a answer) chatFinish() string {
	if len(a.turn.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (a answer) anUsage() map[string]any {
	t := a.turn
	return map[string]any{"input_tokens": t.InputTokens, "output_tokens": t.OutputTokens, "cache_read_input_tokens": t.CachedTokens,
		"cache_creation_input_tokens": t.CacheWriteTokens}
}

func (a answer) chatUsage() map[string]any {
	t := a.turn
	p := t.InputTokens + t.CachedTokens + t.CacheWriteTokens
	return map[string]any{"prompt_tokens": p, "completion_tokens": t.OutputTokens, "total_tokens": p + t.OutputTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": t.CachedTokens}}
}

func (a answer) gmUsage() map[string]any {
	t := a.turn
	p := t.InputTokens + t.CachedTokens
	return map[string]any{"promptTokenCount": p, "candidatesTokenCount": t.OutputTokens, "totalTokenCount": p + t.OutputTokens, "cachedContentTokenCount": t.CachedTokens}
}

func (a answer) rsItems() []any {
	t := a.turn
	var out []any
	if t.Reasoning != "" {
		out = append(out, map[string]any{"id": "rs_mock", "type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": t.Reasoning}}, "encrypted_content": "mock-encrypted"})
	}
	if t.Text != "" {
		out = append(out, rsMessage(t.Text, "completed"))
	}
	for i := range t.ToolCalls {
		out = append(out, a.rsToolItem(i, "completed"))
	}
	return out
}

// rsToolItem is the output item of tool call i: a function_call, or a
// custom_tool_call (its input Args as written) for a Custom call; in
// progress, it holds no arguments or input yet.
func (a answer) rsToolItem(i int, status string) map[string]any {
	tc := a.turn.ToolCalls[i]
	if tc.Custom {
		input := tc.Args
		if status != "completed" {
			input = ""
		}
		return map[string]any{"id": fmt.Sprintf("ctc_mock_%d", i+1), "type": "custom_tool_call", "status": status, "call_id": a.callID(i), "name": tc.Name, "input": input}
	}
	args := a.args(i)
	if status != "completed" {
		args = ""
	}
	return map[string]any{"id": fmt.Sprintf("fc_mock_%d", i+1), "type": "function_call", "status": status, "call_id": a.callID(i), "name": tc.Name, "arguments": args}
}

func rsMessage(text, status string) map[string]any {
	return map[string]any{"id": "msg_mock", "type": "message", "status": status, "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

func (a answer) rsResponse(status string, output []any) map[string]any {
	t := a.turn
	p := t.InputTokens + t.CachedTokens
	r := map[string]any{"id": "resp_mock", "object": "response", "created_at": time.Now().Unix(), "status": status, "model": a.model,
		"output": output, "error": nil, "incomplete_details": nil, "usage": nil}
	if status == "completed" {
		r["usage"] = map[string]any{"input_tokens": p, "input_tokens_details": map[string]any{"cached_tokens": t.CachedTokens},
			"output_tokens": t.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": p + t.OutputTokens}
	}
	if output == nil {
		r["output"] = []any{}
	}
	return r
}
