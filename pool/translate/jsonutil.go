package translate

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// objectKeys decodes body as a JSON object into typed (a pointer to a wire
// struct) and checks its top-level keys: a key in known is decoded, a key in
// ignored is dropped on purpose (its loss does not change the answer), any
// other key is a FieldError (the target cannot express it). valid says
// body is known to be valid JSON: then it is decoded by one scan
// (decodeValid, by the struct's scan) when it can be.
func objectKeys[T any](body []byte, typed *T, scan func([]byte, *T, map[string]keyOnly) bool, known, ignored []string, valid bool) error {
	if valid {
		if keys, ok := decodeValid(body, typed, scan); ok {
			return checkKeys("", keys, known, ignored)
		}
	}
	if err := json.Unmarshal(body, typed); err != nil {
		var raw map[string]keyOnly
		if err := json.Unmarshal(body, &raw); err != nil {
			return &FieldError{Field: "body", Reason: "not a JSON object: " + err.Error()}
		}
		return wireErr("body", err)
	}
	// The body is valid JSON (an object, or null): its keys are read by a
	// scan instead of a second json.Unmarshal, which validated and walked
	// the whole (often 100 KiB) body again.
	return checkKeys("", topKeys(body), known, ignored)
}

// topKeys returns the top-level keys of b, valid JSON, with whether each
// value is null (the last of duplicate keys wins, as in json.Unmarshal
// into a map); nil when b is not an object. Keys with escapes or non-ASCII
// bytes are decoded by json.Unmarshal, so they compare as Unmarshal's map
// keys do (FuzzTopKeys).
func topKeys(b []byte) map[string]keyOnly {
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil
	}
	keys := map[string]keyOnly{}
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
		keys[key] = keyOnly{null: string(b[vs:ve]) == "null"}
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

// keyOnly records only whether a value is null: the key check needs no
// copy of the (large) values.
type keyOnly struct{ null bool }

func (k *keyOnly) UnmarshalJSON(b []byte) error {
	k.null = string(b) == "null"
	return nil
}

// checkKeys reports the first key of raw (sorted, so errors are stable)
// that is neither known nor ignored; null values are absent.
func checkKeys[V keyOnly | json.RawMessage](prefix string, raw map[string]V, known, ignored []string) error {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if contains(known, k) || contains(ignored, k) || isNull(raw[k]) {
			continue
		}
		return fieldErr(prefix+k, "not translatable to another API")
	}
	return nil
}

func isNull[V keyOnly | json.RawMessage](v V) bool {
	switch x := any(v).(type) {
	case keyOnly:
		return x.null
	case json.RawMessage:
		return string(x) == "null"
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// wireErr turns an encoding/json error into a FieldError naming the field.
func wireErr(where string, err error) error {
	var te *json.UnmarshalTypeError
	if ok := asTypeErr(err, &te); ok && te.Field != "" {
		return fieldErr(te.Field, "must be %s, not a JSON %s", goTypeWord(te.Type.Kind().String()), te.Value)
	}
	return &FieldError{Field: where, Reason: err.Error()}
}

func asTypeErr(err error, te **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*te = t
	}
	return ok
}

func goTypeWord(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	case "float64", "int", "int64":
		return "a number"
	}
	return kind
}

// stringOrArray decodes raw, a value of a decoded body (valid JSON), as
// either a JSON string or an array; str is set for a string, arr for an
// array (by scan, the element struct's one scan, when it is not nil). null
// and absent give neither.
func stringOrArray[T any](raw json.RawMessage, field string, arr *[]T, scan func([]byte, *T) bool) (str string, isStr bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	if raw[0] == '"' {
		if s, ok := plainString(raw); ok {
			return s, true, nil
		}
		if err := json.Unmarshal(raw, &str); err != nil {
			return "", false, wireErr(field, err)
		}
		return str, true, nil
	}
	if raw[0] != '[' {
		return "", false, fieldErr(field, "must be a string or an array")
	}
	if scan != nil && scanArray(raw, arr, scan) {
		return "", false, nil // one scan: raw is valid JSON, a value of a decoded body
	}
	if err := json.Unmarshal(raw, arr); err != nil {
		return "", false, prefixErr(field, wireErr(field, err))
	}
	return "", false, nil
}

// plainString is the value of raw, a JSON string token, when it needs no
// decoding: closed, without escapes, control bytes or bytes json.Unmarshal
// would replace (invalid UTF-8). raw comes from a body the caller has
// already validated (a json.RawMessage field), so this saves a second scan
// and decode of what is often the whole system prompt; anything
// else goes to json.Unmarshal, whose result is the same (FuzzPlainString).
func plainString(raw []byte) (string, bool) {
	b, ok := plainBytes(raw)
	if !ok {
		return "", false
	}
	return string(b), true
}

// plainBytes is plainString's value as a slice of raw, without a copy.
func plainBytes(raw []byte) ([]byte, bool) {
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

// prefixErr puts field in front of a FieldError's field.
func prefixErr(field string, err error) error {
	if fe, ok := err.(*FieldError); ok && fe.Field != field && !strings.HasPrefix(fe.Field, field) {
		return &FieldError{Field: field + "." + fe.Field, Reason: fe.Reason}
	}
	return err
}

// mustJSON marshals v; the wire types here always marshal.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("translate: marshal %T: %v", v, err))
	}
	return b
}

// argsOrEmpty returns args, or "{}" when empty (APIs want an object).
func argsOrEmpty(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	return args
}

// rawArgs returns a tool call's arguments as a JSON object for APIs that
// carry them as an object (Anthropic input, Gemini args).
func rawArgs(field, args string) (json.RawMessage, error) {
	a := argsOrEmpty(args)
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(a), &probe); err != nil {
		return nil, fieldErr(field, "tool call arguments are not a JSON object")
	}
	return json.RawMessage(a), nil
}

// dataURL splits "data:image/png;base64,AAAA" into media type and data.
func dataURL(u string) (mediaType, data string, ok bool) {
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

// imageURL renders an image part as a URL (a data: URL for inline data).
func imageURL(p Part) string {
	if p.URL != "" {
		return p.URL
	}
	return "data:" + p.MediaType + ";base64," + p.Data
}

// imageFromURL makes an image part from a URL, splitting data: URLs.
func imageFromURL(u string) Part {
	if mt, data, ok := dataURL(u); ok {
		return Part{Kind: KindImage, MediaType: mt, Data: data}
	}
	return Part{Kind: KindImage, URL: u}
}

// textOnly concatenates the text parts of parts; a part of another kind is
// a *FieldError naming field[i].
func textOnly(field string, parts []Part) (string, error) {
	var b strings.Builder
	for i, p := range parts {
		if p.Kind != KindText {
			return "", fieldErr(fmt.Sprintf("%s[%d]", field, i), "%s content is not expressible here (text only)", p.Kind)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// sse renders one SSE event; name may be "".
func sse(name string, data []byte) []byte {
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

// effortRank is the index of e in Efforts, or -1.
func effortRank(e string) int {
	for i, v := range Efforts {
		if v == e {
			return i
		}
	}
	return -1
}

// nearestEffort maps e onto the allowed values (a subset of Efforts, in
// order): the lowest allowed value at or above e, else the highest allowed.
func nearestEffort(e string, allowed []string) string {
	r := effortRank(e)
	for _, a := range allowed {
		if effortRank(a) >= r {
			return a
		}
	}
	return allowed[len(allowed)-1]
}

// effortBudget is the thinking budget (tokens) an effort stands for, for
// APIs that take a budget; budgetEffort is the inverse.
var effortBudget = map[string]int{"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768, "max": 32768}

func budgetEffort(b int) string {
	switch {
	case b <= 1024:
		return "minimal"
	case b <= 4096:
		return "low"
	case b <= 12288:
		return "medium"
	case b <= 24576:
		return "high"
	}
	return "xhigh"
}
