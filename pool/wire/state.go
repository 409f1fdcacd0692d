package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// The state a stateful API (Responses) carries across calls, as the pool
// keys it (SPEC POOL-18; the rule is in package pool, state.go): "r:" and a
// response id, "e:" and a hash of an encrypted reasoning content (never the
// content itself).

// RespKey is the state key of a stored response (previous_response_id).
func RespKey(id string) string { return "r:" + id }

// encKey is the state key of an encrypted reasoning content: 16 bytes of
// its SHA-256, hex.
func encKey(enc string) string {
	h := sha256.Sum256([]byte(enc))
	return "e:" + hex.EncodeToString(h[:16])
}

// stateKeys lists the state a Responses answer (a Response object) carries:
// its id and the encrypted contents of its reasoning items.
func stateKeys(resp *responseObject) []string {
	var keys []string
	if resp == nil {
		return nil
	}
	if resp.ID != "" {
		keys = append(keys, RespKey(resp.ID))
	}
	for _, it := range resp.Output {
		if it.Type == "reasoning" && it.Encrypted != "" {
			keys = append(keys, encKey(it.Encrypted))
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
	out, ok := spliceTopLevel(body, "input", append(input, ']'))
	if !ok {
		return body
	}
	return out
}
