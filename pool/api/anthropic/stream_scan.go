package anthropic

import (
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
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
	ok := wirefmt.PlainObject(data, 0, len(data), func(key, v []byte) bool {
		switch string(key) {
		case "type":
			typ = string(v) == `"content_block_delta"`
			return typ
		case "index":
			n, e, ok := wirefmt.PlainUint(v, 0, 9)
			idx, index = n, ok && e == len(v)
			return index
		case "delta":
			var dtyp, dtext bool
			delta = wirefmt.PlainObject(v, 0, len(v), func(key, v []byte) bool {
				switch string(key) {
				case "type":
					dtyp = string(v) == `"text_delta"`
					return dtyp
				case "text":
					text, dtext = wirefmt.PlainString(v)
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
