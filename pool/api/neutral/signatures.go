package neutral

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// SigKey is the state key of a reasoning signature: "s:" and 16 bytes of
// its SHA-256, hex (never the signature itself).
func SigKey(sig string) string {
	h := sha256.Sum256([]byte(sig))
	return "s:" + hex.EncodeToString(h[:16])
}

// The JSON literals the signature scans look for (keys and type words).
var (
	QuotedSignature  = []byte(`"signature"`)
	QuotedRedacted   = []byte(`"redacted_thinking"`)
	QuotedThoughtSig = []byte(`"thoughtSignature"`)
	QuotedSigDelta   = []byte(`"signature_delta"`)
)

// SigKeyLit is SigKey of a JSON string literal; a literal without escapes
// is hashed in place (signatures are base64: they have none).
func SigKeyLit(lit []byte) string {
	if bytes.IndexByte(lit, '\\') < 0 {
		h := sha256.Sum256(lit[1 : len(lit)-1])
		return "s:" + hex.EncodeToString(h[:16])
	}
	var s string
	_ = json.Unmarshal(lit, &s)
	return SigKey(s)
}
