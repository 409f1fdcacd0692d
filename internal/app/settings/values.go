package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Values maps key names to values: int for KindMS and KindCount, bool,
// string, []string for KindList. A complete set has every key of Keys.
// Values are never modified in place once shared: Clone, then change.
type Values map[string]any

// Clone returns a copy whose lists are copies too.
func (v Values) Clone() Values {
	out := maps.Clone(v)
	for k, x := range out {
		if l, ok := x.([]string); ok {
			out[k] = slices.Clone(l)
		}
	}
	return out
}

// Int is the int value of key (0 when unset or of another kind).
func (v Values) Int(key string) int { n, _ := v[key].(int); return n }

// Bool is the bool value of key.
func (v Values) Bool(key string) bool { b, _ := v[key].(bool); return b }

// String is the string value of key.
func (v Values) String(key string) string { s, _ := v[key].(string); return s }

// List is the list value of key (shared: do not modify).
func (v Values) List(key string) []string { l, _ := v[key].([]string); return l }

// equal reports whether a and b are the same value of one kind.
func equal(a, b any) bool {
	la, okA := a.([]string)
	lb, okB := b.([]string)
	if okA || okB {
		return okA && okB && slices.Equal(la, lb)
	}
	return a == b
}

// SplitList splits every value on commas, trims spaces and drops empties
// (a list flag given several times, or its environment variable).
func SplitList(vals []string) []string {
	out := []string{}
	for _, v := range vals {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// SplitGateways splits the comma-separated spelling of the gateway list
// (one string, as --gateway and GATEWAY give it) into gateways (SPEC
// GW-4). A comma inside a URL's userinfo belongs to the password: a
// piece is joined back to the one before it when that one starts with a
// scheme ("http://"), has no '@' yet, and the piece has an '@' and no
// scheme of its own. So "http://u:pa,ss@h:1,h2:2" is two gateways, the
// first with the password "pa,ss"; a bare host:port never takes a comma.
func SplitGateways(text string) []string {
	var out []string
	for _, part := range strings.Split(text, ",") {
		if n := len(out); n > 0 && strings.Contains(out[n-1], "://") && !strings.Contains(out[n-1], "@") &&
			strings.Contains(part, "@") && !strings.Contains(part, "://") {
			out[n-1] += "," + part
			continue
		}
		out = append(out, part)
	}
	return trimList(out)
}

// trimList trims spaces off every item and drops empties.
func trimList(l []string) []string {
	out := []string{}
	for _, x := range l {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// ParseText reads the text form of key's value, as `dual-proxy settings
// set KEY=VALUE` and the environment give it: a whole number, true/false
// (also 1/0, yes/no, on/off), a string, or a comma-separated list (""
// is the empty list). The error is the message of a FieldError; it never
// repeats the text, which may be a key pasted into the wrong field.
func ParseText(k Key, text string) (any, error) {
	switch k.Kind {
	case KindMS, KindCount:
		n, err := strconv.Atoi(strings.TrimSpace(text))
		if err != nil {
			return nil, errors.New("want a whole number")
		}
		return n, nil
	case KindBool:
		b, err := ParseBool(text)
		if err != nil {
			return nil, err
		}
		return b, nil
	case KindList:
		if k.Name == Gateway {
			return SplitGateways(text), nil
		}
		return SplitList([]string{text}), nil
	}
	return text, nil
}

// ParseBool reads a boolean as every source gives it (the file, the API,
// `dual-proxy settings set`, a flag's environment variable): true, 1, yes,
// on or false, 0, no, off, in any case, spaces around ignored. The error
// never repeats the text, which may be a secret.
func ParseBool(text string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, errors.New("want true or false")
}

// ItemError is the error of one item of a list value: Index is its
// 0-based place, so the field is "KEY[Index]".
type ItemError struct {
	Index   int
	Message string
}

// Error is the message.
func (e *ItemError) Error() string { return e.Message }

// ParseJSON reads key's value from JSON: a number (whole), a boolean, a
// string, an array of strings, or for every kind also a string in the
// text form (ParseText), so a script may send every value as text. A
// list's item that is null, empty or not a string is an *ItemError (a
// null is never dropped or read as ""); other errors are the message of a
// FieldError at the key. No error repeats the value, which may be a secret.
func ParseJSON(k Key, raw json.RawMessage) (any, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil && k.Kind != KindString {
		return ParseText(k, s)
	}
	switch k.Kind {
	case KindMS, KindCount:
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f != float64(int(f)) {
			return nil, errors.New("want a whole number")
		}
		return int(f), nil
	case KindBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, errors.New("want true or false")
		}
		return b, nil
	case KindList:
		return parseJSONList(k, raw)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, errors.New("want a string")
	}
	return s, nil
}

// parseJSONList reads a JSON array of strings, item by item: an item
// that is null, not a string or blank is an *ItemError. An array item of
// the gateway list is exactly one gateway: a comma in it is part of a
// password, never a separator.
func parseJSONList(k Key, raw json.RawMessage) (any, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, errors.New("want a list of strings ([] for none)")
	}
	l := make([]string, 0, len(items))
	for i, it := range items {
		var s string
		switch {
		case string(it) == "null":
			return nil, &ItemError{Index: i, Message: "null is not a value: remove the item ([] for none)"}
		case json.Unmarshal(it, &s) != nil:
			return nil, &ItemError{Index: i, Message: "want a string"}
		case strings.TrimSpace(s) == "":
			return nil, &ItemError{Index: i, Message: "empty item: remove it ([] for none)"}
		}
		l = append(l, s)
	}
	if k.Name == Gateway {
		return trimList(l), nil
	}
	return SplitList(l), nil
}

// Text is the text form of a value (ParseText reads it back): lists
// ([]string, or []any as a Document decoded from JSON holds them)
// comma-separated.
func Text(x any) string {
	switch v := x.(type) {
	case []string:
		return strings.Join(v, ",")
	case []any:
		parts := make([]string, len(v))
		for i, p := range v {
			parts[i] = Text(p)
		}
		return strings.Join(parts, ",")
	case float64:
		// A number decoded from a JSON document: a whole one prints as
		// digits (3600000, never 3.6e+06), which ParseText accepts.
		if v == float64(int64(v)) {
			return strconv.FormatInt(int64(v), 10)
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	case nil:
		return ""
	}
	return fmt.Sprint(x)
}
