package translate

// The Chat Completions request's decoders over one scan (decodeValid):
// one per wire struct, a switch over its JSON names.

// The JSON names of each decoded struct's fields, for scanMembers' check of
// keys that match one only ignoring case.
var (
	chatRequestFields = []string{"model", "messages", "tools", "tool_choice", "parallel_tool_calls", "max_tokens",
		"max_completion_tokens", "temperature", "top_p", "top_k", "stop", "stream", "stream_options",
		"reasoning_effort", "response_format", "user", "n", "modalities", "prompt_cache_key"}
	chatMessageFields = []string{"role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content",
		"reasoning", "refusal", "function_call", "cache_control"}
	chatToolCallFields     = []string{"index", "id", "type", "function"}
	chatCallFunctionFields = []string{"name", "arguments"}
	chatToolFields         = []string{"type", "function"}
	chatToolFunctionFields = []string{"name", "description", "parameters", "strict"}
)

// scanChatRequest decodes the Chat Completions request object b into w,
// recording its top-level keys in keys.
func scanChatRequest(b []byte, w *chatRequest, keys map[string]keyOnly) bool {
	return scanMembers(b, chatRequestFields, keys, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "model":
			return true, scanString(v, &w.Model)
		case "messages":
			return true, scanArray(v, &w.Messages, scanChatMessage)
		case "tools":
			return true, scanArray(v, &w.Tools, scanChatTool)
		case "tool_choice":
			return true, scanRaw(v, &w.ToolChoice)
		case "parallel_tool_calls":
			return true, unmarshal(v, &w.ParallelToolCalls)
		case "max_tokens":
			return true, unmarshal(v, &w.MaxTokens)
		case "max_completion_tokens":
			return true, unmarshal(v, &w.MaxCompletionTokens)
		case "temperature":
			return true, unmarshal(v, &w.Temperature)
		case "top_p":
			return true, unmarshal(v, &w.TopP)
		case "top_k":
			return true, unmarshal(v, &w.TopK)
		case "stop":
			return true, scanRaw(v, &w.Stop)
		case "stream":
			return true, unmarshal(v, &w.Stream)
		case "stream_options":
			return true, unmarshal(v, &w.StreamOptions)
		case "reasoning_effort":
			return true, scanString(v, &w.ReasoningEffort)
		case "response_format":
			return true, unmarshal(v, &w.ResponseFormat)
		case "user":
			return true, scanString(v, &w.User)
		case "n":
			return true, unmarshal(v, &w.N)
		case "modalities":
			return true, unmarshal(v, &w.Modalities)
		case "prompt_cache_key":
			return true, scanString(v, &w.PromptCacheKey)
		}
		return false, true
	})
}

func scanChatMessage(b []byte, m *chatMessage) bool {
	return scanMembers(b, chatMessageFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "role":
			return true, scanString(v, &m.Role)
		case "content":
			return true, scanRaw(v, &m.Content)
		case "name":
			return true, scanString(v, &m.Name)
		case "tool_calls":
			return true, scanArray(v, &m.ToolCalls, scanChatToolCall)
		case "tool_call_id":
			return true, scanString(v, &m.ToolCallID)
		case "reasoning_content":
			return true, unmarshal(v, &m.ReasoningContent)
		case "reasoning":
			return true, unmarshal(v, &m.Reasoning)
		case "refusal":
			return true, unmarshal(v, &m.Refusal)
		case "function_call":
			return true, scanRaw(v, &m.FunctionCall)
		case "cache_control":
			return true, unmarshal(v, &m.CacheControl)
		}
		return false, true
	})
}

func scanChatToolCall(b []byte, tc *chatToolCall) bool {
	return scanMembers(b, chatToolCallFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "index":
			return true, unmarshal(v, &tc.Index)
		case "id":
			return true, scanString(v, &tc.ID)
		case "type":
			return true, scanString(v, &tc.Type)
		case "function":
			return true, scanObject(v, &tc.Function, scanChatCallFunction)
		}
		return false, true
	})
}

func scanChatCallFunction(b []byte, f *chatCallFunction) bool {
	return scanMembers(b, chatCallFunctionFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "name":
			return true, scanString(v, &f.Name)
		case "arguments":
			return true, scanString(v, &f.Arguments)
		}
		return false, true
	})
}

func scanChatTool(b []byte, t *chatTool) bool {
	return scanMembers(b, chatToolFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, scanString(v, &t.Type)
		case "function":
			return true, scanObject(v, &t.Function, scanChatToolFunction)
		}
		return false, true
	})
}

func scanChatToolFunction(b []byte, f *chatToolFunction) bool {
	return scanMembers(b, chatToolFunctionFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "name":
			return true, scanString(v, &f.Name)
		case "description":
			return true, scanString(v, &f.Description)
		case "parameters":
			return true, scanRaw(v, &f.Parameters)
		case "strict":
			return true, unmarshal(v, &f.Strict)
		}
		return false, true
	})
}

var chatContentPartFields = []string{"type", "text", "image_url", "cache_control"}

// scanChatContentPart decodes a content part (stringOrArray's arrays).
func scanChatContentPart(b []byte, p *chatContentPart) bool {
	return scanMembers(b, chatContentPartFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, scanString(v, &p.Type)
		case "text":
			return true, scanString(v, &p.Text)
		case "image_url":
			return true, unmarshal(v, &p.ImageURL)
		case "cache_control":
			return true, unmarshal(v, &p.CacheControl)
		}
		return false, true
	})
}
