package chat

import (
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

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
func scanChatRequest(b []byte, w *chatRequest, keys map[string]wirefmt.KeyOnly) bool {
	return wirefmt.ScanMembers(b, chatRequestFields, keys, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "model":
			return true, wirefmt.ScanString(v, &w.Model)
		case "messages":
			return true, wirefmt.ScanArray(v, &w.Messages, scanChatMessage)
		case "tools":
			return true, wirefmt.ScanArray(v, &w.Tools, scanChatTool)
		case "tool_choice":
			return true, wirefmt.ScanRaw(v, &w.ToolChoice)
		case "parallel_tool_calls":
			return true, wirefmt.Unmarshal(v, &w.ParallelToolCalls)
		case "max_tokens":
			return true, wirefmt.Unmarshal(v, &w.MaxTokens)
		case "max_completion_tokens":
			return true, wirefmt.Unmarshal(v, &w.MaxCompletionTokens)
		case "temperature":
			return true, wirefmt.Unmarshal(v, &w.Temperature)
		case "top_p":
			return true, wirefmt.Unmarshal(v, &w.TopP)
		case "top_k":
			return true, wirefmt.Unmarshal(v, &w.TopK)
		case "stop":
			return true, wirefmt.ScanRaw(v, &w.Stop)
		case "stream":
			return true, wirefmt.Unmarshal(v, &w.Stream)
		case "stream_options":
			return true, wirefmt.Unmarshal(v, &w.StreamOptions)
		case "reasoning_effort":
			return true, wirefmt.ScanString(v, &w.ReasoningEffort)
		case "response_format":
			return true, wirefmt.Unmarshal(v, &w.ResponseFormat)
		case "user":
			return true, wirefmt.ScanString(v, &w.User)
		case "n":
			return true, wirefmt.Unmarshal(v, &w.N)
		case "modalities":
			return true, wirefmt.Unmarshal(v, &w.Modalities)
		case "prompt_cache_key":
			return true, wirefmt.ScanString(v, &w.PromptCacheKey)
		}
		return false, true
	})
}

// scanChatMessage decodes one message of a valid request body by one scan.
func scanChatMessage(b []byte, m *chatMessage) bool {
	return wirefmt.ScanMembers(b, chatMessageFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "role":
			return true, wirefmt.ScanString(v, &m.Role)
		case "content":
			return true, wirefmt.ScanRaw(v, &m.Content)
		case "name":
			return true, wirefmt.ScanString(v, &m.Name)
		case "tool_calls":
			return true, wirefmt.ScanArray(v, &m.ToolCalls, scanChatToolCall)
		case "tool_call_id":
			return true, wirefmt.ScanString(v, &m.ToolCallID)
		case "reasoning_content":
			return true, wirefmt.Unmarshal(v, &m.ReasoningContent)
		case "reasoning":
			return true, wirefmt.Unmarshal(v, &m.Reasoning)
		case "refusal":
			return true, wirefmt.Unmarshal(v, &m.Refusal)
		case "function_call":
			return true, wirefmt.ScanRaw(v, &m.FunctionCall)
		case "cache_control":
			return true, wirefmt.Unmarshal(v, &m.CacheControl)
		}
		return false, true
	})
}

// scanChatToolCall decodes one tool call of a valid request body by one
// scan.
func scanChatToolCall(b []byte, tc *chatToolCall) bool {
	return wirefmt.ScanMembers(b, chatToolCallFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "index":
			return true, wirefmt.Unmarshal(v, &tc.Index)
		case "id":
			return true, wirefmt.ScanString(v, &tc.ID)
		case "type":
			return true, wirefmt.ScanString(v, &tc.Type)
		case "function":
			return true, wirefmt.ScanObject(v, &tc.Function, scanChatCallFunction)
		}
		return false, true
	})
}

// scanChatCallFunction decodes a tool call's function by one scan.
func scanChatCallFunction(b []byte, f *chatCallFunction) bool {
	return wirefmt.ScanMembers(b, chatCallFunctionFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "name":
			return true, wirefmt.ScanString(v, &f.Name)
		case "arguments":
			return true, wirefmt.ScanString(v, &f.Arguments)
		}
		return false, true
	})
}

// scanChatTool decodes one tool of a valid request body by one scan.
func scanChatTool(b []byte, t *chatTool) bool {
	return wirefmt.ScanMembers(b, chatToolFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, wirefmt.ScanString(v, &t.Type)
		case "function":
			return true, wirefmt.ScanObject(v, &t.Function, scanChatToolFunction)
		}
		return false, true
	})
}

// scanChatToolFunction decodes a tool's function by one scan.
func scanChatToolFunction(b []byte, f *chatToolFunction) bool {
	return wirefmt.ScanMembers(b, chatToolFunctionFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "name":
			return true, wirefmt.ScanString(v, &f.Name)
		case "description":
			return true, wirefmt.ScanString(v, &f.Description)
		case "parameters":
			return true, wirefmt.ScanRaw(v, &f.Parameters)
		case "strict":
			return true, wirefmt.Unmarshal(v, &f.Strict)
		}
		return false, true
	})
}

// chatContentPartFields are the JSON names of chatContentPart, in field
// order.
var chatContentPartFields = []string{"type", "text", "image_url", "cache_control"}

// scanChatContentPart decodes a content part (stringOrArray's arrays).
func scanChatContentPart(b []byte, p *chatContentPart) bool {
	return wirefmt.ScanMembers(b, chatContentPartFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, wirefmt.ScanString(v, &p.Type)
		case "text":
			return true, wirefmt.ScanString(v, &p.Text)
		case "image_url":
			return true, wirefmt.Unmarshal(v, &p.ImageURL)
		case "cache_control":
			return true, wirefmt.Unmarshal(v, &p.CacheControl)
		}
		return false, true
	})
}
