package responses

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// The state a stateful API (Responses) carries across calls, as the pool
// keys it (the rule is in package pool, state.go): "r:" and a
// response id, "i:" and a stored item id, "c:" and a conversation id, "e:"
// and a hash of an encrypted reasoning content (never the content itself).

// RespKey is the state key of a stored response (previous_response_id).
func RespKey(id string) string { return "r:" + id }

// encKey is the state key of an encrypted reasoning content: 16 bytes of
// its SHA-256, hex.
func encKey(enc string) string {
	h := sha256.Sum256([]byte(enc))
	return "e:" + hex.EncodeToString(h[:16])
}

// itemKey is the state key of a stored Responses item id (an output
// Item an item_reference input may name later).
func itemKey(id string) string { return "i:" + id }

// convKey is the state key of a Responses conversation id.
func convKey(id string) string { return "c:" + id }

// stateKeys lists the state a Responses answer (a Response object) carries:
// its id, its output items' ids, its conversation and the encrypted
// contents of its reasoning items.
func stateKeys(resp *responseObject) []string {
	var keys []string
	if resp == nil {
		return nil
	}
	if resp.ID != "" {
		keys = append(keys, RespKey(resp.ID))
	}
	if id := conversationID(resp.Conversation); id != "" {
		keys = append(keys, convKey(id))
	}
	for _, it := range resp.Output {
		if it.ID != "" {
			keys = append(keys, itemKey(it.ID))
		}
		if it.Type == "reasoning" && it.Encrypted != "" {
			keys = append(keys, encKey(it.Encrypted))
		}
	}
	return keys
}

// conversationID is the id of a Responses "conversation" value: a string,
// or an object {"id": …}; "" for anything else.
func conversationID(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	var id string
	if raw[0] == '"' {
		_ = json.Unmarshal(raw, &id)
		return id
	}
	var obj struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &obj)
	return obj.ID
}

// stateRefs are the state keys of the stored state a Responses request
// body names besides previous_response_id: its conversation, then the
// items of its item_reference inputs (CallInfo.StateRefs). The body is
// decoded for them only when it mentions one.
func stateRefs(body, input []byte) []string {
	var keys []string
	if bytes.Contains(body, []byte(`"conversation"`)) {
		var top struct {
			Conversation json.RawMessage `json:"conversation"`
		}
		if json.Unmarshal(body, &top) == nil {
			if id := conversationID(top.Conversation); id != "" {
				keys = append(keys, convKey(id))
			}
		}
	}
	if bytes.Contains(input, []byte(`"item_reference"`)) {
		var items []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		_ = json.Unmarshal(input, &items)
		for _, it := range items {
			if it.Type == "item_reference" && it.ID != "" {
				keys = append(keys, itemKey(it.ID))
			}
		}
	}
	return keys
}

// StripReasoning returns body without the input reasoning items whose
// encrypted content keep refuses; body itself when nothing is dropped.
func StripReasoning(body []byte, keep func(key string) bool) []byte {
	var top struct {
		Input json.RawMessage `json:"input"`
	}
	if json.Unmarshal(body, &top) != nil || len(top.Input) == 0 || top.Input[0] != '[' {
		return body
	}
	var items []json.RawMessage
	if json.Unmarshal(top.Input, &items) != nil {
		return body
	}
	kept := items[:0:0]
	for _, raw := range items {
		var it struct {
			Type string `json:"type"`
			Enc  string `json:"encrypted_content"`
		}
		if json.Unmarshal(raw, &it) == nil && it.Type == "reasoning" && it.Enc != "" && !keep(encKey(it.Enc)) {
			continue
		}
		kept = append(kept, raw)
	}
	if len(kept) == len(items) {
		return body
	}
	input := []byte{'['}
	for i, raw := range kept {
		if i > 0 {
			input = append(input, ',')
		}
		input = append(input, raw...)
	}
	out, ok := wirefmt.SpliceTopLevel(body, "input", append(input, ']'))
	if !ok {
		return body
	}
	return out
}
