package translate

// The Responses request's decoders over one scan (decodeValid): one per
// wire struct, a switch over its JSON names.

// The JSON names of each decoded struct's fields, for scanMembers' check of
// keys that match one only ignoring case.
var (
	rsRequestFields = []string{"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
		"max_output_tokens", "temperature", "top_p", "stream", "reasoning", "text", "user", "prompt_cache_key"}
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
		case "prompt_cache_key":
			return true, scanString(v, &w.PromptCacheKey)
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

var (
	rsItemFields = []string{"type", "id", "status", "role", "content", "call_id", "name", "arguments", "output",
		"summary", "tools", "input", "encrypted_content"}
	rsContentFields = []string{"type", "text", "refusal", "image_url", "detail", "annotations"}
)

// scanRsItem decodes an input item (stringOrArray's arrays).
func scanRsItem(b []byte, it *rsItem) bool {
	return scanMembers(b, rsItemFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, scanString(v, &it.Type)
		case "id":
			return true, scanString(v, &it.ID)
		case "status":
			return true, scanString(v, &it.Status)
		case "role":
			return true, scanString(v, &it.Role)
		case "content":
			return true, scanRaw(v, &it.Content)
		case "call_id":
			return true, scanString(v, &it.CallID)
		case "name":
			return true, scanString(v, &it.Name)
		case "arguments":
			return true, scanStringPtr(v, &it.Arguments)
		case "output":
			return true, scanRaw(v, &it.Output)
		case "summary":
			return true, unmarshal(v, &it.Summary)
		case "tools":
			return true, scanArray(v, &it.Tools, scanRsTool)
		case "input":
			return true, scanString(v, &it.Input)
		case "encrypted_content":
			return true, scanString(v, &it.EncryptedContent)
		}
		return false, true
	})
}

// scanRsContent decodes a content item (stringOrArray's arrays).
func scanRsContent(b []byte, c *rsContent) bool {
	return scanMembers(b, rsContentFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, scanString(v, &c.Type)
		case "text":
			return true, scanString(v, &c.Text)
		case "refusal":
			return true, scanString(v, &c.Refusal)
		case "image_url":
			return true, scanString(v, &c.ImageURL)
		case "detail":
			return true, scanString(v, &c.Detail)
		case "annotations":
			return true, unmarshal(v, &c.Annotations)
		}
		return false, true
	})
}
