package gemini

import (
	"encoding/json"
	"path"
	"strings"
	"unicode"

	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// camelKeys rewrites snake_case object keys to camelCase (proto JSON accepts
// both), leaving user data (function args, responses, schemas) untouched.
func camelKeys(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			ck := camel(k)
			if wirefmt.Contains(gmOpaque, k) || wirefmt.Contains(gmOpaque, ck) {
				out[ck] = val
				continue
			}
			out[ck] = camelKeys(val)
		}
		return out
	case []any:
		for i := range t {
			t[i] = camelKeys(t[i])
		}
	}
	return v
}

func camel(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	var b strings.Builder
	up := false
	for _, r := range s {
		switch {
		case r == '_':
			up = true
		case up:
			b.WriteRune(unicode.ToUpper(r))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// openAPISchema converts Gemini's OpenAPI-subset schema (type words in
// upper case: "OBJECT") to JSON Schema by lower-casing the type words.
func openAPISchema(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case map[string]any:
			if s, ok := t["type"].(string); ok {
				t["type"] = strings.ToLower(s)
			}
			for _, c := range t {
				walk(c)
			}
		case []any:
			for _, c := range t {
				walk(c)
			}
		}
	}
	walk(v)
	return wirefmt.MustJSON(v)
}

// imageMime guesses an image URL's media type from its extension (Gemini's
// fileData wants one).
func imageMime(u string) string {
	switch strings.ToLower(path.Ext(strings.SplitN(u, "?", 2)[0])) {
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".webp":
		return "image/webp"
	case ".gif":
		return "image/gif"
	case ".heic":
		return "image/heic"
	}
	return ""
}
