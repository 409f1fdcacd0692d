package chat

import (
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// contentChunk is what the Chat decoder reads of a plain text chunk.
// Id and model are the strings' bytes (needed for the first chunk only).
type contentChunk struct {
	Id, Model []byte
	Content   string
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
	ok := wirefmt.PlainObject(data, 0, len(data), func(key, v []byte) bool {
		switch string(key) {
		case "id":
			s, ok := wirefmt.PlainBytes(v)
			c.Id = s
			return ok
		case "model":
			s, ok := wirefmt.PlainBytes(v)
			c.Model = s
			return ok
		case "object":
			_, ok := wirefmt.PlainBytes(v)
			return ok
		case "system_fingerprint":
			_, ok := wirefmt.PlainBytes(v)
			return ok || string(v) == "null"
		case "created":
			_, n, ok := wirefmt.PlainUint(v, 0, 18)
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
	return wirefmt.PlainObject(v, 0, len(v), func(key, v []byte) bool {
		switch string(key) {
		case "index":
			_, n, ok := wirefmt.PlainUint(v, 0, 9)
			return ok && n == len(v)
		case "finish_reason", "logprobs":
			return string(v) == "null"
		case "delta":
			delta = true
			return wirefmt.PlainObject(v, 0, len(v), func(key, v []byte) bool {
				switch string(key) {
				case "content":
					s, ok := wirefmt.PlainString(v)
					c.Content = s
					return ok
				case "role":
					_, ok := wirefmt.PlainBytes(v)
					return ok
				}
				return false
			})
		}
		return false
	}) && delta
}
