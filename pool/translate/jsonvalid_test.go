package translate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// decodeValidSeeds are request bodies of every API: the feature forms, the
// benchmark's conversation and bodies that must take json.Unmarshal's way
// (escaped and non-ASCII keys, repeated arrays, type errors).
func decodeValidSeeds() [][]byte {
	var out [][]byte
	for _, rf := range reqFeatures {
		for _, api := range apis {
			if form, ok := rf.forms[api]; ok {
				out = append(out, []byte(compact(form)))
			}
		}
	}
	for _, s := range []string{benchRequest(), chatBenchRequest(),
		`{"model":"m","messages":[{"role":"user","content":"a"}],"messages":[{"role":"user","content":"b"}]}`,
		`{"MODEL":"m","Messages":[{"ROLE":"user","content":"x"}],"max_tokens":1}`,
		`{"mod\u0065l":"m","messages":[]}`, `{"modél":"m"}`, `{"model":1}`, `{"messages":{}}`,
		`{"messages":[null,{"role":"user","content":null}],"system":null,"model":null}`,
		`{"metadata":{"user_id":"a"},"metadata":{"x":1},"stream":true,"max_tokens":1e3}`,
		`{"model":"a\"b","system":"line\nbreak","messages":[{"role":"user","content":[{"type":"text","text":"\u00e9"}]}]}`,
		` { "model" : "m" , "messages" : [ { "role" : "user" , "content" : "hi" } ] } `, `null`, `[]`, `{}`} {
		out = append(out, []byte(s))
	}
	return out
}

// wireTypes are the four APIs' request structs, fresh.
func wireTypes() []any { return []any{&anRequest{}, &chatRequest{}, &rsRequest{}, &gmRequest{}} }

// FuzzDecodeValid: a valid JSON body decoded by decodeValid fills each wire
// struct exactly as json.Unmarshal does and finds topKeys' keys, or gives
// way to json.Unmarshal; DecodeValidRequest answers as DecodeRequest (SPEC
// POOL-21: the translated request is the client's; it is decoded
// once). Invalid bodies must not make it panic.
func FuzzDecodeValid(f *testing.F) {
	for _, s := range decodeValidSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			for _, api := range apis {
				_, _ = DecodeValidRequest(api, in, "m", true)
			}
			return
		}
		checkDecodeValid(t, in)
	})
}

func checkDecodeValid(t *testing.T, in []byte) {
	t.Helper()
	for _, typ := range wireTypes() {
		want := reflect.New(reflect.TypeOf(typ).Elem()).Interface()
		werr := json.Unmarshal(in, want)
		keys, ok := decodeValid(in, typ)
		if !ok {
			continue
		}
		if werr != nil {
			t.Fatalf("%T: decodeValid took %s, json.Unmarshal: %v", typ, in, werr)
		}
		if !reflect.DeepEqual(typ, want) {
			t.Fatalf("%T of %s:\n got %+v\nwant %+v", typ, in, typ, want)
		}
		if tk := topKeys(in); !reflect.DeepEqual(keys, tk) {
			t.Fatalf("keys of %s: %v, topKeys %v", in, keys, tk)
		}
	}
	for _, api := range apis {
		r1, e1 := DecodeRequest(api, in, "m", true)
		r2, e2 := DecodeValidRequest(api, in, "m", true)
		if fmt.Sprint(e1) != fmt.Sprint(e2) || !reflect.DeepEqual(r1, r2) {
			t.Fatalf("%s %s:\nDecodeRequest      %+v %v\nDecodeValidRequest %+v %v", api, in, r1, e1, r2, e2)
		}
	}
}

// TestDecodeValid runs the seeds and checks that the usual bodies take the
// one scan (SPEC POOL-21).
func TestDecodeValid(t *testing.T) {
	for _, s := range decodeValidSeeds() {
		t.Run("POOL-21/same-as-unmarshal", func(t *testing.T) { checkDecodeValid(t, s) })
	}
	system := strings.Repeat("You are a coding agent; answer briefly. ", 400)
	for _, c := range []struct {
		body string
		w    any
	}{
		{benchRequest(), &anRequest{}}, {chatBenchRequest(), &chatRequest{}},
		{`{"model":"m","stream":true,"max_tokens":1024,"system":"` + system + `","messages":[{"role":"user","content":"say something"}]}`, &anRequest{}},
		{`{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"say something"}]}`, &chatRequest{}},
	} {
		t.Run("POOL-21/one-scan", func(t *testing.T) {
			if _, ok := decodeValid([]byte(c.body), c.w); !ok {
				t.Fatalf("%T: the usual body takes json.Unmarshal", c.w)
			}
		})
	}
}
