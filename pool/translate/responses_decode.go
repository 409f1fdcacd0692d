package translate

// The Responses request's decoders over one scan (decodeValid): one per
// wire struct, a switch over its JSON names.

// The JSON names of each decoded struct's fields, for scanMembers' check of
// keys that match one only ignoring case.
var (
	rsRequestFields = []string{"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
		"max_output_tokens", "temperature", "top_p", "stream", "reasoning", "text", "user"}
	rsToolFields = []string{"type", "name", "description", "parameters", "strict", "tools"}
)

// scanRsRequest decodes the Responses request object b into w, recording
// its top-level keys in keys.
func scanRsRequest(b []byte, w *rsRequest, keys map[string]keyOnly) bool {
	return scanMembers(b, rsRequestFields, keys, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "model":
			return true, scanString(v, &w.Model)
		case "input":
			return true, scanRaw(v, &w.Input)
		case "instructions":
			return true, scanString(v, &w.Instructions)
		case "tools":
			return true, scanArray(v, &w.Tools, scanRsTool)
		case "tool_choice":
			return true, scanRaw(v, &w.ToolChoice)
		case "parallel_tool_calls":
			return true, unmarshal(v, &w.ParallelToolCalls)
		case "max_output_tokens":
			return true, unmarshal(v, &w.MaxOutputTokens)
		case "temperature":
			return true, unmarshal(v, &w.Temperature)
		case "top_p":
			return true, unmarshal(v, &w.TopP)
		case "stream":
			return true, unmarshal(v, &w.Stream)
		case "reasoning":
			return true, unmarshal(v, &w.Reasoning)
		case "text":
			return true, unmarshal(v, &w.Text)
		case "user":
			return true, scanString(v, &w.User)
		}
		return false, true
	})
}

// scanRsTool decodes a tool, a namespace's tools by their own scan.
func scanRsTool(b []byte, t *rsTool) bool {
	return scanMembers(b, rsToolFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, scanString(v, &t.Type)
		case "name":
			return true, scanString(v, &t.Name)
		case "description":
			return true, scanString(v, &t.Description)
		case "parameters":
			return true, scanRaw(v, &t.Parameters)
		case "strict":
			return true, unmarshal(v, &t.Strict)
		case "tools":
			return true, scanArray(v, &t.Tools, scanRsTool)
		}
		return false, true
	})
}
