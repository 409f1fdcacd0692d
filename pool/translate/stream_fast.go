package translate

import (
	"bytes"
	"strconv"
)

// Per-event fast paths. Nearly every event of a translated
// stream is a text delta in one fixed shape; these read it with one scan
// and no json.Unmarshal (whose validation pass, reflection and string
// copies were most of a translated event's cost). Any other shape, a key
// out of place, escapes, an unexpected value, whitespace where none is
// usual: false, and the caller decodes the event as before. A true result
// is what json.Unmarshal would have given the decoder (FuzzPlainBlockText,
// FuzzPlainContentChunk).

// plainBlockText reads the usual Anthropic text delta, compact, keys in
// any order, each once (Anthropic sends them in this order; a re-encoding
// proxy may sort them):
//
//	{"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":S}}
//
// with S a plainString: the block index and the text.
func plainBlockText(data []byte) (int, string, bool) {
	var idx int64
	var text string
	var typ, index, delta bool
	ok := plainObject(data, 0, len(data), func(key, v []byte) bool {
		switch string(key) {
		case "type":
			typ = string(v) == `"content_block_delta"`
			return typ
		case "index":
			n, e, ok := plainUint(v, 0, 9)
			idx, index = n, ok && e == len(v)
			return index
		case "delta":
			var dtyp, dtext bool
			delta = plainObject(v, 0, len(v), func(key, v []byte) bool {
				switch string(key) {
				case "type":
					dtyp = string(v) == `"text_delta"`
					return dtyp
				case "text":
					text, dtext = plainString(v)
					return dtext
				}
				return false
			}) && dtyp && dtext
			return delta
		}
		return false
	})
	return int(idx), text, ok && typ && index && delta
}

// plainUint reads a JSON number at b[i] that is a non-negative integer of
// at most digits digits (9: fits an int, 18: an int64) without a leading
// zero, what json.Unmarshal stores as is; it returns the value and the
// index after it.
func plainUint(b []byte, i, digits int) (int64, int, bool) {
	j := i
	for j < len(b) && j-i <= digits && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == i || j-i > digits || (b[i] == '0' && j-i > 1) || (j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E')) {
		return 0, 0, false
	}
	n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
	return n, j, err == nil
}

// contentChunk is what the Chat decoder reads of a plain text chunk.
// id and model are the strings' bytes (needed for the first chunk only).
type contentChunk struct {
	id, model []byte
	content   string
}

// plainContentChunk reads the usual Chat text chunk, compact, top-level
// keys in any order, each at most once:
//
//	{"id":S,"object":S,"created":N,"model":S,"system_fingerprint":S|null,
//	 "choices":[{"index":N,"delta":{"content":S,"role":S},"finish_reason":null,"logprobs":null}]}
//
// with every S a plainString; "choices" and its "delta" are required,
// every other key optional. Usage, errors, tool calls, reasoning and a
// finish reason take the full decode.
func plainContentChunk(data []byte) (contentChunk, bool) {
	var c contentChunk
	var choices bool
	ok := plainObject(data, 0, len(data), func(key, v []byte) bool {
		switch string(key) {
		case "id":
			s, ok := plainBytes(v)
			c.id = s
			return ok
		case "model":
			s, ok := plainBytes(v)
			c.model = s
			return ok
		case "object":
			_, ok := plainBytes(v)
			return ok
		case "system_fingerprint":
			_, ok := plainBytes(v)
			return ok || string(v) == "null"
		case "created":
			_, n, ok := plainUint(v, 0, 18)
			return ok && n == len(v)
		case "choices":
			choices = true
			return len(v) > 2 && v[0] == '[' && v[len(v)-1] == ']' && plainChoice(v[1:len(v)-1], &c)
		}
		return false
	})
	return c, ok && choices
}

// plainChoice reads the one choice of a plain text chunk.
func plainChoice(v []byte, c *contentChunk) bool {
	delta := false
	return plainObject(v, 0, len(v), func(key, v []byte) bool {
		switch string(key) {
		case "index":
			_, n, ok := plainUint(v, 0, 9)
			return ok && n == len(v)
		case "finish_reason", "logprobs":
			return string(v) == "null"
		case "delta":
			delta = true
			return plainObject(v, 0, len(v), func(key, v []byte) bool {
				switch string(key) {
				case "content":
					s, ok := plainString(v)
					c.content = s
					return ok
				case "role":
					_, ok := plainBytes(v)
					return ok
				}
				return false
			})
		}
		return false
	}) && delta
}

// plainObject walks the compact object b[i:end] ('{' … '}', nothing after
// it), calling fn with each key (no escapes) and the raw bytes of its
// value; a value is a string without escapes or quotes inside, a
// bare literal or number, or an object or array of such values (nested
// strings free of brackets). It fails on a repeated key, on anything it
// cannot skip that way and when fn returns false.
func plainObject(b []byte, i, end int, fn func(key, v []byte) bool) bool {
	if end-i < 2 || b[i] != '{' || b[end-1] != '}' {
		return false
	}
	var seen [8][]byte
	n := 0
	i++
	if i == end-1 {
		return true // {}
	}
	for {
		if i >= end || b[i] != '"' {
			return false
		}
		ke := i + 1
		for ke < end && b[ke] != '"' && b[ke] != '\\' {
			ke++
		}
		if ke+1 >= end || b[ke] != '"' || b[ke+1] != ':' {
			return false
		}
		key := b[i+1 : ke]
		for _, k := range seen[:n] {
			if bytes.Equal(k, key) {
				return false
			}
		}
		if n == len(seen) {
			return false
		}
		seen[n] = key
		n++
		vs := ke + 2
		ve := plainValueEnd(b, vs, end-1)
		if ve < 0 || !fn(key, b[vs:ve]) {
			return false
		}
		switch {
		case ve == end-1:
			return true
		case b[ve] == ',':
			i = ve + 1
		default:
			return false
		}
	}
}

// plainValueEnd returns the index after the value at b[i] (see
// plainObject), at most end; -1 when it is not such a value.
func plainValueEnd(b []byte, i, end int) int {
	if i >= end {
		return -1
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < end; j++ {
			switch b[j] {
			case '"':
				return j + 1
			case '\\':
				return -1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < end; j++ {
			switch b[j] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			case '"':
				for j++; j < end && b[j] != '"'; j++ {
					if b[j] == '\\' || b[j] == '{' || b[j] == '}' || b[j] == '[' || b[j] == ']' {
						return -1
					}
				}
			}
		}
		return -1
	}
	j := i
	for j < end && b[j] != ',' {
		j++
	}
	return j
}
