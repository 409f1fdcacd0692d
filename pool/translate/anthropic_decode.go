package translate

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
func scanAnRequest(b []byte, w *anRequest, keys map[string]keyOnly) bool {
	return scanMembers(b, anRequestFields, keys, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "model":
			return true, scanString(v, &w.Model)
		case "messages":
			return true, scanArray(v, &w.Messages, scanAnMessage)
		case "system":
			return true, scanRaw(v, &w.System)
		case "max_tokens":
			return true, unmarshal(v, &w.MaxTokens)
		case "metadata":
			return true, unmarshal(v, &w.Metadata)
		case "stop_sequences":
			return true, unmarshal(v, &w.StopSequences)
		case "stream":
			return true, unmarshal(v, &w.Stream)
		case "temperature":
			return true, unmarshal(v, &w.Temperature)
		case "top_p":
			return true, unmarshal(v, &w.TopP)
		case "top_k":
			return true, unmarshal(v, &w.TopK)
		case "tools":
			return true, scanArray(v, &w.Tools, scanAnTool)
		case "tool_choice":
			return true, unmarshal(v, &w.ToolChoice)
		case "thinking":
			return true, unmarshal(v, &w.Thinking)
		case "output_config":
			return true, unmarshal(v, &w.OutputConfig)
		case "output_format":
			return true, unmarshal(v, &w.OutputFormat)
		}
		return false, true
	})
}

func scanAnMessage(b []byte, m *anMessage) bool {
	return scanMembers(b, anMessageFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "role":
			return true, scanString(v, &m.Role)
		case "content":
			return true, scanRaw(v, &m.Content)
		}
		return false, true
	})
}

func scanAnTool(b []byte, t *anTool) bool {
	return scanMembers(b, anToolFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, scanString(v, &t.Type)
		case "name":
			return true, scanString(v, &t.Name)
		case "description":
			return true, scanString(v, &t.Description)
		case "input_schema":
			return true, scanRaw(v, &t.InputSchema)
		case "strict":
			return true, unmarshal(v, &t.Strict)
		case "cache_control":
			return true, unmarshal(v, &t.CacheControl)
		}
		return false, true
	})
}

var anBlockFields = []string{"type", "text", "source", "id", "name", "input", "tool_use_id", "content",
	"is_error", "thinking", "signature", "data", "cache_control"}

// scanAnBlock decodes a content block (of a message, the system prompt or
// a tool result: stringOrArray's arrays).
func scanAnBlock(b []byte, bl *anBlock) bool {
	return scanMembers(b, anBlockFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, scanString(v, &bl.Type)
		case "text":
			return true, scanString(v, &bl.Text)
		case "source":
			return true, unmarshal(v, &bl.Source)
		case "id":
			return true, scanString(v, &bl.ID)
		case "name":
			return true, scanString(v, &bl.Name)
		case "input":
			return true, scanRaw(v, &bl.Input)
		case "tool_use_id":
			return true, scanString(v, &bl.ToolUseID)
		case "content":
			return true, scanRaw(v, &bl.Content)
		case "is_error":
			return true, unmarshal(v, &bl.IsError)
		case "thinking":
			return true, scanStringPtr(v, &bl.Thinking)
		case "signature":
			return true, scanStringPtr(v, &bl.Signature)
		case "data":
			return true, scanString(v, &bl.Data)
		case "cache_control":
			return true, unmarshal(v, &bl.CacheControl)
		}
		return false, true
	})
}
