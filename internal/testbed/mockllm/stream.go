package mockllm

// stream writes the streamed answer. Text and tool arguments arrive in two
// deltas each (split mid-token). After the first visible delta a
// FailAfterOutput turn sends the in-stream error and a DropAfterOutput turn
// cuts the connection.
func (a answer) stream(api string, s *sseWriter) {
	switch api {
	case Anthropic:
		a.anthropicStream(s)
	case Chat:
		a.chatStream(s)
	case Responses:
		a.responsesStream(s)
	default:
		a.geminiStream(s)
	}
}

// afterVisible ends a failing turn after its first visible output; it
// returns true when the stream must stop.
func (a answer) afterVisible(s *sseWriter, failEvent func()) bool {
	switch {
	case a.turn.DropAfterOutput:
		s.drop()
	case a.turn.FailAfterOutput:
		failEvent()
		return true
	}
	return false
}

func (a answer) anthropicStream(s *sseWriter) {
	t := a.turn
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_mock", "type": "message", "role": "assistant",
		"model": a.model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": t.InputTokens, "output_tokens": 0, "cache_read_input_tokens": t.CachedTokens,
			"cache_creation_input_tokens": t.CacheWriteTokens}}})
	s.event("ping", map[string]any{"type": "ping"})
	fail := func() {
		s.event("error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})
	}
	idx, first := 0, true
	block := func(start map[string]any, deltas []map[string]any) bool {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": start})
		for _, d := range deltas {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": d})
			if first {
				first = false
				if a.afterVisible(s, fail) {
					return true
				}
			}
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
		return false
	}
	if t.Reasoning != "" {
		var ds []map[string]any
		for _, h := range halves(t.Reasoning) {
			ds = append(ds, map[string]any{"type": "thinking_delta", "thinking": h})
		}
		if block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, append(ds, map[string]any{"type": "signature_delta", "signature": a.sign.thinking(t.Reasoning)})) {
			return
		}
	}
	if t.Text != "" {
		var ds []map[string]any
		for _, h := range halves(t.Text) {
			ds = append(ds, map[string]any{"type": "text_delta", "text": h})
		}
		if block(map[string]any{"type": "text", "text": ""}, ds) {
			return
		}
	}
	for i, tc := range t.ToolCalls {
		frags := halves(a.args(i))
		if a.args(i) == "{}" {
			frags = []string{""} // Anthropic streams a call with no input as one empty fragment
		}
		var ds []map[string]any
		for _, h := range frags {
			ds = append(ds, map[string]any{"type": "input_json_delta", "partial_json": h})
		}
		if block(map[string]any{"type": "tool_use", "id": a.callID(i), "name": tc.Name, "input": map[string]any{}}, ds) {
			return
		}
	}
	s.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": a.anStop(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": t.OutputTokens}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

func (a answer) chatStream(s *sseWriter) {
	t := a.turn
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": a.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	fail := func() {
		s.event("", map[string]any{"error": map[string]any{"message": "Overloaded", "type": "server_error", "code": "server_error"}})
	}
	s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	first := true
	visible := func(delta map[string]any) bool {
		s.event("", chunk(delta, nil))
		if first {
			first = false
			return a.afterVisible(s, fail)
		}
		return false
	}
	for _, h := range halves(t.Reasoning) {
		if h != "" && visible(map[string]any{"reasoning_content": h}) {
			return
		}
	}
	for _, h := range halves(t.Text) {
		if h != "" && visible(map[string]any{"content": h}) {
			return
		}
	}
	for i, tc := range t.ToolCalls {
		head := map[string]any{"index": i, "id": a.callID(i), "type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""}}
		if visible(map[string]any{"tool_calls": []any{head}}) {
			return
		}
		for _, h := range halves(a.args(i)) {
			s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": h}}}}, nil))
		}
	}
	s.event("", chunk(map[string]any{}, a.chatFinish()))
	if a.usageAsked {
		c := chunk(nil, nil)
		c["choices"], c["usage"] = []any{}, a.chatUsage()
		s.event("", c)
	}
	s.raw("", "[DONE]")
}

func (a answer) responsesStream(s *sseWriter) {
	t := a.turn
	seq := 0
	ev := func(name string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = name, seq
		seq++
		s.event(name, fields)
	}
	fail := func() {
		ev("error", map[string]any{"code": "server_error", "message": "Overloaded", "param": nil})
		ev("response.failed", map[string]any{"response": map[string]any{"id": "resp_mock", "object": "response", "status": "failed",
			"output": []any{}, "error": map[string]any{"code": "server_error", "message": "Overloaded"}}})
	}
	ev("response.created", map[string]any{"response": a.rsResponse("in_progress", nil)})
	ev("response.in_progress", map[string]any{"response": a.rsResponse("in_progress", nil)})
	out, first := 0, true
	visible := func(name string, fields map[string]any) bool {
		ev(name, fields)
		if first {
			first = false
			return a.afterVisible(s, fail)
		}
		return false
	}
	if t.Reasoning != "" {
		ev("response.output_item.added", map[string]any{"output_index": out, "item": map[string]any{"id": "rs_mock", "type": "reasoning", "summary": []any{}}})
		ev("response.reasoning_summary_part.added", map[string]any{"item_id": "rs_mock", "output_index": out, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}})
		for _, h := range halves(t.Reasoning) {
			if visible("response.reasoning_summary_text.delta", map[string]any{"item_id": "rs_mock", "output_index": out, "summary_index": 0, "delta": h}) {
				return
			}
		}
		ev("response.output_item.done", map[string]any{"output_index": out, "item": a.rsItems()[0]})
		out++
	}
	if t.Text != "" {
		ev("response.output_item.added", map[string]any{"output_index": out, "item": map[string]any{"id": "msg_mock", "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
		ev("response.content_part.added", map[string]any{"item_id": "msg_mock", "output_index": out, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, h := range halves(t.Text) {
			if visible("response.output_text.delta", map[string]any{"item_id": "msg_mock", "output_index": out, "content_index": 0, "delta": h}) {
				return
			}
		}
		ev("response.output_text.done", map[string]any{"item_id": "msg_mock", "output_index": out, "content_index": 0, "text": t.Text})
		ev("response.content_part.done", map[string]any{"item_id": "msg_mock", "output_index": out, "content_index": 0, "part": map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}})
		ev("response.output_item.done", map[string]any{"output_index": out, "item": rsMessage(t.Text, "completed")})
		out++
	}
	for i, tc := range t.ToolCalls {
		item := a.rsToolItem(i, "in_progress")
		id := item["id"]
		if visible("response.output_item.added", map[string]any{"output_index": out, "item": item}) {
			return
		}
		if tc.Custom {
			for _, h := range halves(tc.Args) {
				ev("response.custom_tool_call_input.delta", map[string]any{"item_id": id, "output_index": out, "delta": h})
			}
			ev("response.custom_tool_call_input.done", map[string]any{"item_id": id, "output_index": out, "input": tc.Args})
		} else {
			for _, h := range halves(a.args(i)) {
				ev("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": out, "delta": h})
			}
			ev("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": out, "arguments": a.args(i)})
		}
		ev("response.output_item.done", map[string]any{"output_index": out, "item": a.rsToolItem(i, "completed")})
		out++
	}
	ev("response.completed", map[string]any{"response": a.rsResponse("completed", a.rsItems())})
}

func (a answer) geminiStream(s *sseWriter) {
	t := a.turn
	chunk := func(parts []any) map[string]any {
		return map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}}, "modelVersion": a.model, "responseId": "mock-resp"}
	}
	fail := func() {
		s.event("", map[string]any{"error": map[string]any{"code": 503, "message": "Overloaded", "status": "UNAVAILABLE"}})
	}
	first := true
	visible := func(parts []any) bool {
		s.event("", chunk(parts))
		if first {
			first = false
			return a.afterVisible(s, fail)
		}
		return false
	}
	for _, h := range halves(t.Reasoning) {
		if h != "" && visible([]any{map[string]any{"text": h, "thought": true}}) {
			return
		}
	}
	for _, h := range halves(t.Text) {
		if h != "" && visible([]any{map[string]any{"text": h}}) {
			return
		}
	}
	sig := a.geminiSignature()
	for i, tc := range t.ToolCalls {
		part := map[string]any{"functionCall": map[string]any{"name": tc.Name, "args": rawJSON(a.args(i))}}
		if i == 0 && sig != "" {
			part["thoughtSignature"], sig = sig, ""
		}
		if visible([]any{part}) {
			return
		}
	}
	end := map[string]any{"text": ""}
	if sig != "" {
		end["thoughtSignature"] = sig
	}
	last := chunk([]any{end})
	last["candidates"].([]any)[0].(map[string]any)["finishReason"] = "STOP"
	last["usageMetadata"] = a.gmUsage()
	s.event("", last)
}
