package translate

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// The pool's translated request is decoded once. ParseRequest
// (pool/wire) has already validated the client's body (its scan checks what
// json.Valid does), so the body is valid JSON; a json.Unmarshal into the wire struct would
// validate and walk all of it again (two passes over a 16 KiB–1 MiB body,
// most of it in a few strings). decodeValid fills the wire struct from the
// valid body with one scan instead: objects of the wire struct types are
// walked field by field, a string field takes a plainString value as is, a
// json.RawMessage field takes the value's bytes, and every other value (a
// number, a pointer, a small object) is handed to json.Unmarshal on its own
// bytes. Whatever it is not sure to decode exactly as json.Unmarshal would
// — a key with escapes or non-ASCII bytes, a repeated array, a type error —
// makes it return false, and the caller decodes the whole body with
// json.Unmarshal as before (FuzzDecodeValid holds the two to the same
// result).

// decodeValid decodes body, valid JSON, into typed (a pointer to a struct)
// and returns the body's top-level keys as topKeys does; ok false means
// the caller must decode with json.Unmarshal (typed is then partly set).
func decodeValid(body []byte, typed any) (keys map[string]keyOnly, ok bool) {
	v := reflect.ValueOf(typed).Elem()
	i := jsonscan.SkipWS(body, 0)
	if i >= len(body) || body[i] != '{' || v.Kind() != reflect.Struct {
		return nil, false
	}
	keys = map[string]keyOnly{}
	if !decodeObject(body[i:], v, keys) {
		return nil, false
	}
	return keys, true
}

// decodeObject decodes the object b into the struct v, recording the keys
// in keys when it is not nil.
func decodeObject(b []byte, v reflect.Value, keys map[string]keyOnly) bool {
	fields := structFields(v.Type())
	if fields == nil {
		return false
	}
	for i := jsonscan.SkipWS(b, 1); i < len(b) && b[i] == '"'; {
		ke := jsonscan.SkipString(b, i)
		if ke < 0 {
			return false // not valid JSON after all
		}
		vs := jsonscan.SkipWS(b, jsonscan.SkipWS(b, ke)+1) // past ':'
		if vs >= len(b) {
			return false
		}
		key := b[i+1 : ke-1]
		if !plainKey(key) {
			return false
		}
		ve := jsonscan.SkipValue(b, vs)
		if ve < 0 {
			return false // deeper than the scanner goes, or not valid JSON after all
		}
		if keys != nil {
			keys[string(key)] = keyOnly{null: string(b[vs:ve]) == "null"}
		}
		if f, found := fields.lookup(key); found && !decodeValue(b[vs:ve], v.FieldByIndex(f)) {
			return false
		}
		if i = jsonscan.SkipWS(b, ve); i < len(b) && b[i] == ',' {
			i = jsonscan.SkipWS(b, i+1)
		}
	}
	return true
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodeValue decodes the value b into v.
func decodeValue(b []byte, v reflect.Value) bool {
	if len(b) == 0 {
		return false // not valid JSON after all: json.Unmarshal reports it
	}
	t := v.Type()
	switch {
	case t == rawMessageType:
		v.SetBytes(append([]byte(nil), b...)) // a copy, as RawMessage.UnmarshalJSON
		return true
	case custom(t):
	case t.Kind() == reflect.String:
		if s, ok := plainString(b); ok {
			v.SetString(s)
			return true
		}
	case t.Kind() == reflect.Struct && b[0] == '{':
		return decodeObject(b, v, nil)
	case t.Kind() == reflect.Slice && b[0] == '[' && t.Elem().Kind() == reflect.Struct && !custom(t.Elem()):
		if v.Len() > 0 {
			return false // a repeated key: Unmarshal would decode into the old elements
		}
		return decodeArray(b, v)
	}
	return json.Unmarshal(b, v.Addr().Interface()) == nil
}

// decodeArray decodes the array b into the empty slice v of structs.
func decodeArray(b []byte, v reflect.Value) bool {
	s := reflect.MakeSlice(v.Type(), 0, 0) // [] is an empty slice, not nil
	for i := jsonscan.SkipWS(b, 1); i < len(b) && b[i] != ']'; {
		e := jsonscan.SkipValue(b, i)
		if e <= i {
			return false
		}
		s = reflect.Append(s, reflect.Zero(v.Type().Elem()))
		if !decodeValue(b[i:e], s.Index(s.Len()-1)) {
			return false
		}
		if i = jsonscan.SkipWS(b, e); i < len(b) && b[i] == ',' {
			i = jsonscan.SkipWS(b, i+1)
		}
	}
	v.Set(s)
	return true
}

// custom reports a type that decodes itself (json.Unmarshaler,
// encoding.TextUnmarshaler): json.Unmarshal's business.
func custom(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(unmarshalerType) || p.Implements(unmarshalerType) || p.Implements(textType)
}

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

// fieldSet is a struct type's JSON fields by name (json tag, else the Go
// name); nil for a struct this decoder leaves to json.Unmarshal (embedded
// fields, ",string", names differing only in case).
type fieldSet map[string][]int

func (fs fieldSet) lookup(key []byte) ([]int, bool) {
	if f, ok := fs[string(key)]; ok {
		return f, true
	}
	for name, f := range fs {
		if strings.EqualFold(name, string(key)) {
			return f, true
		}
	}
	return nil, false
}

var fieldSets sync.Map // reflect.Type → fieldSet

func structFields(t reflect.Type) fieldSet {
	if fs, ok := fieldSets.Load(t); ok {
		return fs.(fieldSet)
	}
	fs := fieldSet{}
	if custom(t) {
		fs = nil
	}
	for i := 0; fs != nil && i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			fs = nil
			break
		}
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		for n := range fs {
			if strings.EqualFold(n, name) {
				fs = nil
				break
			}
		}
		if fs == nil || strings.Contains(","+opts+",", ",string,") || !plainKey([]byte(name)) {
			fs = nil
			break
		}
		fs[name] = f.Index
	}
	fieldSets.Store(t, fs)
	return fs
}
