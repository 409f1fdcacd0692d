package anthropic

import (
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// The Anthropic Messages request's decoders over one scan (decodeValid):
// one per wire struct, a switch over its JSON names.

// The JSON names of each decoded struct's fields, for scanMembers' check of
// keys that match one only ignoring case.
var (
	anRequestFields = []string{"model", "messages", "system", "max_tokens", "metadata", "stop_sequences",
		"stream", "temperature", "top_p", "top_k", "tools", "tool_choice", "thinking", "output_config", "output_format"}
	anMessageFields = []string{"role", "content"}
	anToolFields    = []string{"type", "name", "description", "input_schema", "strict", "cache_control"}
)

// scanAnRequest decodes the Messages request object b into w, recording
// its top-level keys in keys.
func scanAnRequest(b []byte, w *anRequest, keys map[string]wirefmt.KeyOnly) bool {
	return wirefmt.ScanMembers(b, anRequestFields, keys, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "model":
			return true, wirefmt.ScanString(v, &w.Model)
		case "messages":
			return true, wirefmt.ScanArray(v, &w.Messages, scanAnMessage)
		case "system":
			return true, wirefmt.ScanRaw(v, &w.System)
		case "max_tokens":
			return true, wirefmt.Unmarshal(v, &w.MaxTokens)
		case "metadata":
			return true, wirefmt.Unmarshal(v, &w.Metadata)
		case "stop_sequences":
			return true, wirefmt.Unmarshal(v, &w.StopSequences)
		case "stream":
			return true, wirefmt.Unmarshal(v, &w.Stream)
		case "temperature":
			return true, wirefmt.Unmarshal(v, &w.Temperature)
		case "top_p":
			return true, wirefmt.Unmarshal(v, &w.TopP)
		case "top_k":
			return true, wirefmt.Unmarshal(v, &w.TopK)
		case "tools":
			return true, wirefmt.ScanArray(v, &w.Tools, scanAnTool)
		case "tool_choice":
			return true, wirefmt.Unmarshal(v, &w.ToolChoice)
		case "thinking":
			return true, wirefmt.Unmarshal(v, &w.Thinking)
		case "output_config":
			return true, wirefmt.Unmarshal(v, &w.OutputConfig)
		case "output_format":
			return true, wirefmt.Unmarshal(v, &w.OutputFormat)
		}
		return false, true
	})
}

// scanAnMessage decodes one message of a valid request body by one scan.
func scanAnMessage(b []byte, m *anMessage) bool {
	return wirefmt.ScanMembers(b, anMessageFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "role":
			return true, wirefmt.ScanString(v, &m.Role)
		case "content":
			return true, wirefmt.ScanRaw(v, &m.Content)
		}
		return false, true
	})
}

// scanAnTool decodes one tool of a valid request body by one scan.
func scanAnTool(b []byte, t *anTool) bool {
	return wirefmt.ScanMembers(b, anToolFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, wirefmt.ScanString(v, &t.Type)
		case "name":
			return true, wirefmt.ScanString(v, &t.Name)
		case "description":
			return true, wirefmt.ScanString(v, &t.Description)
		case "input_schema":
			return true, wirefmt.ScanRaw(v, &t.InputSchema)
		case "strict":
			return true, wirefmt.Unmarshal(v, &t.Strict)
		case "cache_control":
			return true, wirefmt.Unmarshal(v, &t.CacheControl)
		}
		return false, true
	})
}

// anBlockFields are the JSON names of anBlock, in field order.
var anBlockFields = []string{"type", "text", "source", "id", "name", "input", "tool_use_id", "content",
	"is_error", "thinking", "signature", "data", "cache_control"}

// scanAnBlock decodes a content block (of a message, the system prompt or
// a tool result: stringOrArray's arrays).
func scanAnBlock(b []byte, bl *anBlock) bool {
	return wirefmt.ScanMembers(b, anBlockFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, wirefmt.ScanString(v, &bl.Type)
		case "text":
			return true, wirefmt.ScanString(v, &bl.Text)
		case "source":
			return true, wirefmt.Unmarshal(v, &bl.Source)
		case "id":
			return true, wirefmt.ScanString(v, &bl.ID)
		case "name":
			return true, wirefmt.ScanString(v, &bl.Name)
		case "input":
			return true, wirefmt.ScanRaw(v, &bl.Input)
		case "tool_use_id":
			return true, wirefmt.ScanString(v, &bl.ToolUseID)
		case "content":
			return true, wirefmt.ScanRaw(v, &bl.Content)
		case "is_error":
			return true, wirefmt.Unmarshal(v, &bl.IsError)
		case "thinking":
			return true, wirefmt.ScanStringPtr(v, &bl.Thinking)
		case "signature":
			return true, wirefmt.ScanStringPtr(v, &bl.Signature)
		case "data":
			return true, wirefmt.ScanString(v, &bl.Data)
		case "cache_control":
			return true, wirefmt.Unmarshal(v, &bl.CacheControl)
		}
		return false, true
	})
}
