package anthropic

import (
	"encoding/base64"
	"strings"
)

// Tool-call ids across APIs. Anthropic requires tool_use ids
// (and so tool_result tool_use_ids) to match ^[a-zA-Z0-9_-]+$ and answers
// 400 for any other; Chat Completions, Responses and Gemini take any
// string, and some Chat servers mint ids outside that alphabet (Kimi:
// "functions.Bash:0"). The neutral form holds ids as the API that minted
// them wrote them; the Anthropic encoders write an id outside the alphabet
// as anToolIDPrefix and its base64url form, and the Anthropic decoders turn
// such an id back, so a conversation that crosses members keeps matching
// call and result pairs and a Chat member gets its own ids back. The
// mapping is a pure function both ways: the same id is the same on every
// turn (a member's prompt cache sees the same bytes), and no table grows.

// anToolIDPrefix marks an id the pool rewrote for Anthropic.
const anToolIDPrefix = "dpid_"

// anthropicToolIDOK reports whether id is in Anthropic's tool id alphabet.
func anthropicToolIDOK(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}

// anthropicToolID is id as an Anthropic request or answer may carry it:
// id itself when it is in the alphabet (or empty), else the reversible
// "dpid_" form.
func anthropicToolID(id string) string {
	if id == "" || anthropicToolIDOK(id) {
		return id
	}
	return anToolIDPrefix + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// originalToolID undoes anthropicToolID: an id the pool rewrote becomes
// the id its API minted; any other id is returned as is (an id that merely
// starts with the prefix decodes to a string in the alphabet, which
// anthropicToolID never rewrites, so it is not mistaken for one).
func originalToolID(id string) string {
	rest, ok := strings.CutPrefix(id, anToolIDPrefix)
	if !ok {
		return id
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || anthropicToolIDOK(string(raw)) || len(raw) == 0 {
		return id
	}
	return string(raw)
}
