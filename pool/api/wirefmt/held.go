package wirefmt

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"strconv"
)

// Long strings of an encoded request (prompts, message texts, base64
// images) are most of its bytes, and json.Marshal escapes a string byte by
// byte (≈ 10 % of a translated call). The request encoders
// therefore marshal their struct with each long string held back as a short
// mark, then write the held strings in the marks' places with
// AppendJSONString, which writes the bytes Marshal writes for a string
// eight bytes at a time (FuzzAppendJSONString). Marshal's output for a
// string does not depend on where the string is, so the result is
// Marshal's output of the struct with the strings in it, byte for byte
// (FuzzHeldStrings): unless a mark shows up other than exactly once (a
// string held and then left out, such as a dropped turn's reasoning), when
// the encoder runs again without holding. A mark carries a random word
// chosen at start, so a client's JSON (a tool schema) cannot spell one and
// get a held string spliced into it.

// MinHeld is the shortest string held back (bytes): shorter ones cost
// Marshal less than a mark.
const MinHeld = 256

// HeldWord is the random part of every mark (16 base32 letters and
// digits, chosen once per process).
var HeldWord = rand.Text()[:16]

// heldPrefix starts every mark as Marshal writes it: a string of a NUL,
// the prefix with heldWord, a decimal index and a NUL.
var heldPrefix = `"\u0000dual-proxy-held-` + HeldWord + `-`

// HeldStrings collects the strings held back while one request is
// encoded; a nil *heldStrings holds nothing.
type HeldStrings struct {
	Min  int // shortest string held (minHeld; tests lower it)
	vals []string
	size int // sum of len(vals)
}

// Str returns s, or the mark that stands for it until marshal.
func (h *HeldStrings) Str(s string) string {
	if h == nil || len(s) < h.Min || len(s) == 0 {
		return s
	}
	h.vals = append(h.vals, s)
	h.size += len(s)
	return "\x00dual-proxy-held-" + HeldWord + "-" + strconv.Itoa(len(h.vals)-1) + "\x00"
}

// Marshal returns json.Marshal(v) with the held strings in their marks'
// places; ok is false when a mark is not in it exactly once (the caller
// then encodes again with a nil *heldStrings).
func (h *HeldStrings) Marshal(v any) (out []byte, ok bool) {
	b := MustJSON(v)
	if h == nil || len(h.vals) == 0 {
		return b, true
	}
	seen := make([]bool, len(h.vals))
	out = make([]byte, 0, len(b)+h.size+h.size/16)
	for rest := b; ; {
		i := bytes.Index(rest, []byte(heldPrefix))
		if i < 0 {
			out = append(out, rest...)
			break
		}
		out = append(out, rest[:i]...)
		rest = rest[i+len(heldPrefix):]
		j := bytes.Index(rest, []byte(`\u0000"`))
		n, err := strconv.Atoi(string(rest[:max(j, 0)]))
		if j < 1 || err != nil || n < 0 || n >= len(seen) || seen[n] || strconv.Itoa(n) != string(rest[:j]) {
			return nil, false
		}
		seen[n] = true
		out = AppendJSONString(out, h.vals[n])
		rest = rest[j+len(`\u0000"`):]
	}
	for _, s := range seen {
		if !s {
			return nil, false
		}
	}
	return out, true
}

// EncodeHeld runs enc with long strings held back, and again without when
// the marks did not come back intact.
func EncodeHeld(enc func(h *HeldStrings) (any, error)) ([]byte, error) {
	h := &HeldStrings{Min: MinHeld}
	v, err := enc(h)
	if err != nil {
		return nil, err
	}
	if out, ok := h.Marshal(v); ok {
		return out, nil
	}
	if v, err = enc(nil); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}
