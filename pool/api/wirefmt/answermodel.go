package wirefmt

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// ModelValue is model as the JSON string AnswerModel and EventsModel
// write.
func ModelValue(model string) []byte {
	b, _ := json.Marshal(model)
	return b
}

// AnswerModel returns the answer document doc (an Anthropic message, a
// Chat completion or chunk, a Responses object or event, a Gemini
// response) with the model it names set to val (a JSON string,
// ModelValue): the string values of the top-level "model" and
// "modelVersion" (Gemini) and of "model" in a top-level "message"
// (Anthropic's message_start) or "response" (the Responses events) object.
// A pool's client asked for its unified model id and gets that id back,
// whatever the member's own model is called (SPEC POOL-2). doc is returned
// itself when it names no model or is no object; other bytes are kept as
// sent.
func AnswerModel(doc, val []byte) []byte {
	if !bytes.Contains(doc, []byte(`"model`)) {
		return doc // the usual event: no model field, no walk
	}
	type span struct{ s, e int }
	var spans []span
	jsonscan.EachMember(doc, func(k string, vs, ve int) bool {
		switch {
		case (strings.EqualFold(k, "model") || strings.EqualFold(k, "modelVersion")) && doc[vs] == '"':
			spans = append(spans, span{vs, ve})
		case (k == "message" || k == "response") && doc[vs] == '{':
			inner := doc[vs:ve]
			jsonscan.EachMember(inner, func(k string, is, ie int) bool {
				if strings.EqualFold(k, "model") && inner[is] == '"' {
					spans = append(spans, span{vs + is, vs + ie})
				}
				return true
			})
		}
		return true
	})
	if len(spans) == 0 {
		return doc
	}
	out := make([]byte, 0, len(doc)+len(spans)*len(val))
	at := 0
	for _, sp := range spans {
		out = append(append(out, doc[at:sp.s]...), val...)
		at = sp.e
	}
	return append(out, doc[at:]...)
}

// EventsModel is AnswerModel over the data lines of SSE bytes (one or more
// events as the pool writes them to its client): each "data:" line that
// holds an answer document gets val as its model. Other lines, and the
// events' framing, are kept byte for byte; raw itself is returned when no
// line changed.
func EventsModel(raw, val []byte) []byte {
	if !bytes.Contains(raw, []byte(`"model`)) {
		return raw
	}
	var out []byte
	at := 0 // raw[:at] is in out (once out is not nil)
	for i := 0; i < len(raw); {
		end := bytes.IndexByte(raw[i:], '\n')
		if end < 0 {
			end = len(raw)
		} else {
			end += i
		}
		line := raw[i:end]
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			start := i + len("data:")
			if len(data) > 0 && data[0] == ' ' {
				data, start = data[1:], start+1
			}
			data = bytes.TrimSuffix(data, []byte("\r"))
			if nd := AnswerModel(data, val); len(nd) != len(data) || !bytes.Equal(nd, data) {
				out = append(append(out, raw[at:start]...), nd...)
				at = start + len(data)
			}
		}
		i = end + 1
	}
	if out == nil {
		return raw
	}
	return append(out, raw[at:]...)
}
