package neutral

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// ObjectKeys decodes body as a JSON object into typed (a pointer to a wire
// struct) and checks its top-level keys: a key in known is decoded, a key in
// ignored is dropped on purpose (its loss does not change the answer), any
// other key is a FieldError (the target cannot express it). valid says
// body is known to be valid JSON: then it is decoded by one scan
// (decodeValid, by the struct's scan) when it can be.
func ObjectKeys[T any](body []byte, typed *T, scan func([]byte, *T, map[string]wirefmt.KeyOnly) bool, known, ignored []string, valid bool) error {
	if valid {
		if keys, ok := wirefmt.DecodeValid(body, typed, scan); ok {
			return CheckKeys("", keys, known, ignored)
		}
	}
	if err := json.Unmarshal(body, typed); err != nil {
		var raw map[string]wirefmt.KeyOnly
		if err := json.Unmarshal(body, &raw); err != nil {
			return &FieldError{Field: "body", Reason: "not a JSON object: " + err.Error()}
		}
		return WireErr("body", err)
	}
	// The body is valid JSON (an object, or null): its keys are read by a
	// scan instead of a second json.Unmarshal, which validated and walked
	// the whole (often 100 KiB) body again.
	return CheckKeys("", wirefmt.TopKeys(body), known, ignored)
}

// CheckKeys reports the first key of raw (sorted, so errors are stable)
// that is neither known nor ignored; null values are absent.
func CheckKeys[V wirefmt.KeyOnly | json.RawMessage](prefix string, raw map[string]V, known, ignored []string) error {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if wirefmt.Contains(known, k) || wirefmt.Contains(ignored, k) || isNull(raw[k]) {
			continue
		}
		return FieldErr(prefix+k, "not translatable to another API")
	}
	return nil
}

func isNull[V wirefmt.KeyOnly | json.RawMessage](v V) bool {
	switch x := any(v).(type) {
	case wirefmt.KeyOnly:
		return x.Null
	case json.RawMessage:
		return string(x) == "null"
	}
	return false
}

// WireErr turns an encoding/json error into a FieldError naming the field.
func WireErr(where string, err error) error {
	var te *json.UnmarshalTypeError
	if ok := asTypeErr(err, &te); ok && te.Field != "" {
		return FieldErr(te.Field, "must be %s, not a JSON %s", goTypeWord(te.Type.Kind().String()), te.Value)
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

// StringOrArray decodes raw, a value of a decoded body (valid JSON), as
// either a JSON string or an array; str is set for a string, arr for an
// array (by scan, the element struct's one scan, when it is not nil). null
// and absent give neither.
func StringOrArray[T any](raw json.RawMessage, field string, arr *[]T, scan func([]byte, *T) bool) (str string, isStr bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	if raw[0] == '"' {
		if s, ok := wirefmt.PlainString(raw); ok {
			return s, true, nil
		}
		if err := json.Unmarshal(raw, &str); err != nil {
			return "", false, WireErr(field, err)
		}
		return str, true, nil
	}
	if raw[0] != '[' {
		return "", false, FieldErr(field, "must be a string or an array")
	}
	if scan != nil && wirefmt.ScanArray(raw, arr, scan) {
		return "", false, nil // one scan: raw is valid JSON, a value of a decoded body
	}
	if err := json.Unmarshal(raw, arr); err != nil {
		return "", false, prefixErr(field, WireErr(field, err))
	}
	return "", false, nil
}

// prefixErr puts field in front of a FieldError's field.
func prefixErr(field string, err error) error {
	if fe, ok := err.(*FieldError); ok && fe.Field != field && !strings.HasPrefix(fe.Field, field) {
		return &FieldError{Field: field + "." + fe.Field, Reason: fe.Reason}
	}
	return err
}

// ArgsOrEmpty returns args, or "{}" when empty (APIs want an object).
func ArgsOrEmpty(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	return args
}

// RawArgs returns a tool call's arguments as a JSON object for APIs that
// carry them as an object (Anthropic input, Gemini args).
func RawArgs(field, args string) (json.RawMessage, error) {
	a := ArgsOrEmpty(args)
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(a), &probe); err != nil {
		return nil, FieldErr(field, "tool call arguments are not a JSON object")
	}
	return json.RawMessage(a), nil
}

// ImageURL renders an image part as a URL (a data: URL for inline data).
func ImageURL(p Part) string {
	if p.URL != "" {
		return p.URL
	}
	return "data:" + p.MediaType + ";base64," + p.Data
}

// ImageFromURL makes an image part from a URL, splitting data: URLs.
func ImageFromURL(u string) Part {
	if mt, data, ok := wirefmt.DataURL(u); ok {
		return Part{Kind: KindImage, MediaType: mt, Data: data}
	}
	return Part{Kind: KindImage, URL: u}
}

// TextOnly concatenates the text parts of parts; a part of another kind is
// a *FieldError naming field[i].
func TextOnly(field string, parts []Part) (string, error) {
	var b strings.Builder
	for i, p := range parts {
		if p.Kind != KindText {
			return "", FieldErr(fmt.Sprintf("%s[%d]", field, i), "%s content is not expressible here (text only)", p.Kind)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// EffortRank is the index of e in Efforts, or -1.
func EffortRank(e string) int {
	for i, v := range Efforts {
		if v == e {
			return i
		}
	}
	return -1
}

// NearestEffort maps e onto the allowed values (a subset of Efforts, in
// order): the lowest allowed value at or above e, else the highest allowed.
func NearestEffort(e string, allowed []string) string {
	r := EffortRank(e)
	for _, a := range allowed {
		if EffortRank(a) >= r {
			return a
		}
	}
	return allowed[len(allowed)-1]
}

// EffortBudget is the thinking budget (tokens) an effort stands for, for
// APIs that take a budget; budgetEffort is the inverse.
var EffortBudget = map[string]int{"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768, "max": 32768}

// BudgetEffort is the effort word a thinking budget of b tokens stands
// for (the nearest of EffortBudget's steps).
func BudgetEffort(b int) string {
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
