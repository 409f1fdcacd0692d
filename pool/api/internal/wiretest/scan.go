package wiretest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// StructScan is one wire struct's one-scan decoder with its JSON names,
// checked on its own against json.Unmarshal.
type StructScan struct {
	// Type is the struct the decoder fills.
	Type reflect.Type
	// Fields are the JSON names the decoder knows, in the struct's order.
	Fields []string
	// Check fails t when the decoder, given in as one object or an array
	// of them, fills its struct other than json.Unmarshal does.
	Check func(t *testing.T, in []byte)
}

// NewStructScan is the StructScan of scan, the one-scan decoder of T that
// knows fields.
func NewStructScan[T any](fields []string, scan func([]byte, *T) bool) StructScan {
	return StructScan{Type: reflect.TypeFor[T](), Fields: fields, Check: func(t *testing.T, in []byte) {
		t.Helper()
		in = bytes.TrimSpace(in)
		var got, want T
		werr := json.Unmarshal(in, &want)
		if wirefmt.ScanObject(in, &got, scan) {
			sameAsUnmarshal(t, in, got, want, werr)
		}
		var gotS, wantS []T
		werr = json.Unmarshal(in, &wantS)
		if in[0] == '[' && wirefmt.ScanArray(in, &gotS, scan) {
			sameAsUnmarshal(t, in, gotS, wantS, werr)
		}
	}}
}

func sameAsUnmarshal(t *testing.T, in []byte, got, want any, werr error) {
	t.Helper()
	if werr != nil {
		t.Fatalf("%T: the scan took %s, json.Unmarshal: %v", got, in, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%T of %s:\n got %+v\nwant %+v", got, in, got, want)
	}
}

// CheckFieldNames fails t when a decoder's list of JSON names is not its
// struct's (json tags), or when two of them are equal ignoring case: a key
// naming a field only ignoring case must be seen and left to
// json.Unmarshal (SPEC POOL-21).
func CheckFieldNames(t *testing.T, cases []StructScan) {
	t.Helper()
	for _, c := range cases {
		var names []string
		for f := range c.Type.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			names = append(names, name)
		}
		if !reflect.DeepEqual(names, c.Fields) {
			t.Errorf("%v: the decoder's names %q, the struct's %q", c.Type, c.Fields, names)
		}
		for i, a := range names {
			for _, b := range names[i+1:] {
				if strings.EqualFold(a, b) {
					t.Errorf("%v: %q and %q are equal ignoring case", c.Type, a, b)
				}
			}
		}
	}
}

// Containers are in (valid JSON) and the objects and arrays inside it, at
// most 64 and 8 levels deep, so that each decoder meets every nested value
// of a fuzzed body.
func Containers(in []byte) [][]byte { return containers(in, nil, 0) }

func containers(in []byte, out [][]byte, depth int) [][]byte {
	in = bytes.TrimSpace(in)
	if len(in) == 0 || in[0] != '{' && in[0] != '[' || len(out) >= 64 || depth > 8 {
		return out
	}
	out = append(out, in)
	inner := func(vs, ve int) bool {
		out = containers(in[vs:ve], out, depth+1)
		return true
	}
	if in[0] == '{' {
		jsonscan.EachMember(in, func(_ string, vs, ve int) bool { return inner(vs, ve) })
	} else {
		jsonscan.EachElement(in, inner)
	}
	return out
}

// CheckDecodeValid fails t when wirefmt.DecodeValid with scan, the
// request decoder of T, decodes in (valid JSON) other than json.Unmarshal
// does or finds other top-level keys than wirefmt.TopKeys.
func CheckDecodeValid[T any](t *testing.T, in []byte, scan func([]byte, *T, map[string]wirefmt.KeyOnly) bool) {
	t.Helper()
	var got, want T
	werr := json.Unmarshal(in, &want)
	keys, ok := wirefmt.DecodeValid(in, &got, scan)
	if !ok {
		return
	}
	if werr != nil {
		t.Fatalf("%T: decodeValid took %s, json.Unmarshal: %v", got, in, werr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%T of %s:\n got %+v\nwant %+v", got, in, got, want)
	}
	if tk := wirefmt.TopKeys(in); !reflect.DeepEqual(keys, tk) {
		t.Fatalf("keys of %s: %v, topKeys %v", in, keys, tk)
	}
}
