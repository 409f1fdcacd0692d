package wirefmt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// Ptr is a pointer to a copy of v.
func Ptr[T any](v T) *T { return &v }

// TopKeys returns the top-level keys of b, valid JSON, with whether each
// value is null (the last of duplicate keys wins, as in json.Unmarshal
// into a map); nil when b is not an object. Keys with escapes or non-ASCII
// bytes are decoded by json.Unmarshal, so they compare as Unmarshal's map
// keys do (FuzzTopKeys).
func TopKeys(b []byte) map[string]KeyOnly {
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil
	}
	keys := map[string]KeyOnly{}
	for i = jsonscan.SkipWS(b, i+1); i < len(b) && b[i] == '"'; {
		ks, ke := i, jsonscan.SkipString(b, i)
		if ke < 0 {
			return keys
		}
		key := string(b[ks+1 : ke-1])
		if bytes.IndexByte(b[ks:ke], '\\') >= 0 || !isASCII(b[ks:ke]) {
			_ = json.Unmarshal(b[ks:ke], &key)
		}
		vs := jsonscan.SkipWS(b, jsonscan.SkipWS(b, ke)+1) // past ':'
		ve := jsonscan.SkipValid(b, vs)
		keys[key] = KeyOnly{Null: string(b[vs:ve]) == "null"}
		i = jsonscan.SkipWS(b, ve)
		if i < len(b) && b[i] == ',' {
			i = jsonscan.SkipWS(b, i+1)
		}
	}
	return keys
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// KeyOnly records only whether a value is null: the key check needs no
// copy of the (large) values.
type KeyOnly struct{ Null bool }

func (k *KeyOnly) UnmarshalJSON(b []byte) error {
	k.Null = string(b) == "null"
	return nil
}

// Contains tells whether list holds s.
func Contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// PlainString is the value of raw, a JSON string token, when it needs no
// decoding: closed, without escapes, control bytes or bytes json.Unmarshal
// would replace (invalid UTF-8). raw comes from a body the caller has
// already validated (a json.RawMessage field), so this saves a second scan
// and decode of what is often the whole system prompt; anything
// else goes to json.Unmarshal, whose result is the same (FuzzPlainString).
func PlainString(raw []byte) (string, bool) {
	b, ok := PlainBytes(raw)
	if !ok {
		return "", false
	}
	return string(b), true
}

// PlainBytes is plainString's value as a slice of raw, without a copy.
func PlainBytes(raw []byte) ([]byte, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return nil, false
	}
	body := raw[1 : n-1]
	i := 0
	for i+8 <= len(body) && jsonscan.PlainWord(binary.LittleEndian.Uint64(body[i:])) {
		i += 8 // eight bytes at a time (often a 16 KiB prompt)
	}
	for _, c := range body[i:] {
		if c < 0x20 || c == '"' || c == '\\' {
			return nil, false
		}
	}
	if !utf8.Valid(body) {
		return nil, false
	}
	return body, true
}

// MustJSON marshals v; the wire types here always marshal.
func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("translate: marshal %T: %v", v, err))
	}
	return b
}

// DataURL splits "data:image/png;base64,AAAA" into media type and data.
func DataURL(u string) (mediaType, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mediaType, isB64 := strings.CutSuffix(meta, ";base64")
	if !isB64 {
		return "", "", false
	}
	return mediaType, data, true
}

// SSE renders one SSE event; name may be "".
func SSE(name string, data []byte) []byte {
	out := make([]byte, 0, len(name)+len(data)+16)
	if name != "" {
		out = append(out, "event: "...)
		out = append(out, name...)
		out = append(out, '\n')
	}
	out = append(out, "data: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}

// NonEmptyJSON is false for absent, null, [] and {}.
func NonEmptyJSON(raw json.RawMessage) bool {
	s := string(bytes.TrimSpace(raw))
	return s != "" && s != "null" && s != "[]" && s != "{}"
}
