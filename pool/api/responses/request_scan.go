package responses

import (
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

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
func scanRsRequest(b []byte, w *rsRequest, keys map[string]wirefmt.KeyOnly) bool {
	return wirefmt.ScanMembers(b, rsRequestFields, keys, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "model":
			return true, wirefmt.ScanString(v, &w.Model)
		case "input":
			return true, wirefmt.ScanRaw(v, &w.Input)
		case "instructions":
			return true, wirefmt.ScanString(v, &w.Instructions)
		case "tools":
			return true, wirefmt.ScanArray(v, &w.Tools, scanRsTool)
		case "tool_choice":
			return true, wirefmt.ScanRaw(v, &w.ToolChoice)
		case "parallel_tool_calls":
			return true, wirefmt.Unmarshal(v, &w.ParallelToolCalls)
		case "max_output_tokens":
			return true, wirefmt.Unmarshal(v, &w.MaxOutputTokens)
		case "temperature":
			return true, wirefmt.Unmarshal(v, &w.Temperature)
		case "top_p":
			return true, wirefmt.Unmarshal(v, &w.TopP)
		case "stream":
			return true, wirefmt.Unmarshal(v, &w.Stream)
		case "reasoning":
			return true, wirefmt.Unmarshal(v, &w.Reasoning)
		case "text":
			return true, wirefmt.Unmarshal(v, &w.Text)
		case "user":
			return true, wirefmt.ScanString(v, &w.User)
		case "prompt_cache_key":
			return true, wirefmt.ScanString(v, &w.PromptCacheKey)
		}
		return false, true
	})
}

// scanRsTool decodes a tool, a namespace's tools by their own scan.
func scanRsTool(b []byte, t *rsTool) bool {
	return wirefmt.ScanMembers(b, rsToolFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, wirefmt.ScanString(v, &t.Type)
		case "name":
			return true, wirefmt.ScanString(v, &t.Name)
		case "description":
			return true, wirefmt.ScanString(v, &t.Description)
		case "parameters":
			return true, wirefmt.ScanRaw(v, &t.Parameters)
		case "strict":
			return true, wirefmt.Unmarshal(v, &t.Strict)
		case "tools":
			return true, wirefmt.ScanArray(v, &t.Tools, scanRsTool)
		}
		return false, true
	})
}

// The JSON names of rsItem and rsContent, in field order.
var (
	rsItemFields = []string{"type", "id", "status", "role", "content", "call_id", "name", "arguments", "output",
		"summary", "tools", "input", "encrypted_content"}
	rsContentFields = []string{"type", "text", "refusal", "image_url", "detail", "annotations"}
)

// scanRsItem decodes an input item (stringOrArray's arrays).
func scanRsItem(b []byte, it *rsItem) bool {
	return wirefmt.ScanMembers(b, rsItemFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, wirefmt.ScanString(v, &it.Type)
		case "id":
			return true, wirefmt.ScanString(v, &it.ID)
		case "status":
			return true, wirefmt.ScanString(v, &it.Status)
		case "role":
			return true, wirefmt.ScanString(v, &it.Role)
		case "content":
			return true, wirefmt.ScanRaw(v, &it.Content)
		case "call_id":
			return true, wirefmt.ScanString(v, &it.CallID)
		case "name":
			return true, wirefmt.ScanString(v, &it.Name)
		case "arguments":
			return true, wirefmt.ScanStringPtr(v, &it.Arguments)
		case "output":
			return true, wirefmt.ScanRaw(v, &it.Output)
		case "summary":
			return true, wirefmt.Unmarshal(v, &it.Summary)
		case "tools":
			return true, wirefmt.ScanArray(v, &it.Tools, scanRsTool)
		case "input":
			return true, wirefmt.ScanString(v, &it.Input)
		case "encrypted_content":
			return true, wirefmt.ScanString(v, &it.EncryptedContent)
		}
		return false, true
	})
}

// scanRsContent decodes a content item (stringOrArray's arrays).
func scanRsContent(b []byte, c *rsContent) bool {
	return wirefmt.ScanMembers(b, rsContentFields, nil, func(key, v []byte) (bool, bool) {
		switch string(key) {
		case "type":
			return true, wirefmt.ScanString(v, &c.Type)
		case "text":
			return true, wirefmt.ScanString(v, &c.Text)
		case "refusal":
			return true, wirefmt.ScanString(v, &c.Refusal)
		case "image_url":
			return true, wirefmt.ScanString(v, &c.ImageURL)
		case "detail":
			return true, wirefmt.ScanString(v, &c.Detail)
		case "annotations":
			return true, wirefmt.Unmarshal(v, &c.Annotations)
		}
		return false, true
	})
}
