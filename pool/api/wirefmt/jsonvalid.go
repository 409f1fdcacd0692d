package wirefmt

import (
	"encoding/json"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// The pool's translated request is decoded once. ParseRequest
// (the API's ParseRequest) has already validated the client's body (its scan checks what
// json.Valid does), so the body is valid JSON; a json.Unmarshal into the wire
// struct would validate and walk all of it again (two passes over a
// 16 KiB–1 MiB body, most of it in a few strings). decodeValid fills the
// wire struct from the valid body with one scan of pool/internal/jsonscan
// instead: each wire struct has its own decoder (scanAnRequest,
// scanChatMessage…: a switch over its keys), run by scanMembers over the
// object's members; a string field takes a plainString value as is, a
// json.RawMessage field a copy of the value's bytes, a nested struct or a
// slice of structs its own decoder, and every other value (a number, a
// bool, a pointer to a small struct, a []string) is handed to
// json.Unmarshal on its own bytes. Whatever it is not sure to decode exactly
// as json.Unmarshal would — a key with escapes or non-ASCII bytes, a key
// naming a field only ignoring case, a repeated array, a type error — makes
// it return false, and the caller decodes the whole body with
// json.Unmarshal as before (FuzzDecodeValid holds the two to the same
// result for every wire struct). The content arrays the wire struct keeps
// as json.RawMessage (Anthropic blocks, Chat parts, Responses items and
// content) are decoded later by stringOrArray through the same decoders
// (stringOrArray, given the element struct's scan).

// DecodeValid decodes body, valid JSON, into typed (a pointer to one of
// the four APIs' request structs) by scan, that struct's decoder, and
// returns the body's top-level keys as topKeys does; ok false means the
// caller must decode with json.Unmarshal (typed is then zero).
func DecodeValid[T any](body []byte, typed *T, scan func([]byte, *T, map[string]KeyOnly) bool) (keys map[string]KeyOnly, ok bool) {
	i := jsonscan.SkipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	keys = map[string]KeyOnly{}
	b := body[i:]
	if scan == nil || !scanTop(b, typed, keys, scan) {
		return nil, false
	}
	return keys, true
}

// ScanTopAt decodes the request object b into w by scan, recording its keys
// in keys; when the scan gives way, w is left zero for json.Unmarshal.
func scanTop[T any](b []byte, w *T, keys map[string]KeyOnly, scan func([]byte, *T, map[string]KeyOnly) bool) bool {
	if scan(b, w, keys) {
		return true
	}
	var zero T
	*w = zero
	return false
}

// ScanMembers walks the members of the object b (valid JSON, b[0] == '{')
// and hands each key and value to member, which decodes the value into
// its field and reports ok, or reports found false for a key that names no
// field exactly. It returns false when member does, or when json.Unmarshal
// could match a key differently: a key with escapes or non-ASCII bytes, or
// one that equals one of fields (the struct's JSON names) only ignoring
// case. keys, when not nil, records each key with whether its value is
// Null (topKeys' answer).
func ScanMembers(b []byte, fields []string, keys map[string]KeyOnly, member func(key, v []byte) (found, ok bool)) bool {
	for i := jsonscan.SkipWS(b, 1); i < len(b) && b[i] == '"'; {
		ke := jsonscan.SkipString(b, i)
		if ke < 0 {
			return false // not valid JSON after all
		}
		vs := jsonscan.SkipWS(b, jsonscan.SkipWS(b, ke)+1) // past ':'
		key := b[i+1 : ke-1]
		if vs >= len(b) || !plainKey(key) {
			return false
		}
		ve := jsonscan.SkipValue(b, vs)
		if ve <= vs {
			return false // deeper than the scanner goes, or not valid JSON after all
		}
		v := b[vs:ve]
		if keys != nil {
			keys[string(key)] = KeyOnly{Null: string(v) == "null"}
		}
		if found, ok := member(key, v); !ok || !found && foldsOnto(key, fields) {
			return false
		}
		if i = jsonscan.SkipWS(b, ve); i < len(b) && b[i] == ',' {
			i = jsonscan.SkipWS(b, i+1)
		}
	}
	return true
}

// scanObjectAt decodes the value v into *dst: an object by scan, anything
// else (null leaves *dst as it is, another value is a type error) by
// json.Unmarshal.
func ScanObject[T any](v []byte, dst *T, scan func([]byte, *T) bool) bool {
	if v[0] != '{' {
		return Unmarshal(v, dst)
	}
	return scan(v, dst)
}

// scanArrayAt decodes the value v into the slice *dst of structs, each
// element by scanObject; null and type errors go to json.Unmarshal. A
// slice already filled (a repeated key) is json.Unmarshal's business: it
// decodes into the old elements.
func ScanArray[T any](v []byte, dst *[]T, scan func([]byte, *T) bool) bool {
	if v[0] != '[' {
		return Unmarshal(v, dst)
	}
	if len(*dst) > 0 {
		return false
	}
	s := []T{} // [] is an empty slice, not nil
	for i := jsonscan.SkipWS(v, 1); i < len(v) && v[i] != ']'; {
		e := jsonscan.SkipValue(v, i)
		if e <= i {
			return false
		}
		var zero T
		s = append(s, zero)
		if !ScanObject(v[i:e], &s[len(s)-1], scan) {
			return false
		}
		if i = jsonscan.SkipWS(v, e); i < len(v) && v[i] == ',' {
			i = jsonscan.SkipWS(v, i+1)
		}
	}
	*dst = s
	return true
}

// ScanStringAt decodes the value v into *dst: a plainString as it is,
// anything else (escapes, null, a type error) by json.Unmarshal.
func ScanString(v []byte, dst *string) bool {
	if s, ok := PlainString(v); ok {
		*dst = s
		return true
	}
	return Unmarshal(v, dst)
}

// ScanStringPtrAt decodes the value v into the *string *dst: a plainString
// into the string *dst points to (a new one when nil), as json.Unmarshal
// does; anything else (null sets nil) by json.Unmarshal.
func ScanStringPtr(v []byte, dst **string) bool {
	s, ok := PlainString(v)
	if !ok {
		return Unmarshal(v, dst)
	}
	if *dst == nil {
		*dst = new(string)
	}
	**dst = s
	return true
}

// ScanRawAt sets *dst to a copy of the value v, as RawMessage.UnmarshalJSON
// does (null too).
func ScanRaw(v []byte, dst *json.RawMessage) bool {
	*dst = append(json.RawMessage(nil), v...)
	return true
}

// Unmarshal is json.Unmarshal of the value v into dst, reporting success.
func Unmarshal(v []byte, dst any) bool { return json.Unmarshal(v, dst) == nil }

// plainKey is a key without escapes and of ASCII bytes only: it names a
// field as json.Unmarshal would, exactly or ignoring ASCII case.
func plainKey(k []byte) bool {
	for _, c := range k {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// foldsOnto reports that key, a plainKey matching none of fields exactly,
// equals one of them ignoring case: json.Unmarshal would decode it into
// that field.
func foldsOnto(key []byte, fields []string) bool {
	for _, f := range fields {
		if strings.EqualFold(f, string(key)) {
			return true
		}
	}
	return false
}
