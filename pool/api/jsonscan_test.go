package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// FuzzEachMember: the raw scanner never panics, and on valid JSON objects it
// finds exactly the members encoding/json finds, with the same values
// (SPEC POOL-17: request bodies are walked in place, not decoded).
func FuzzEachMember(f *testing.F) {
	for _, s := range []string{`{"model":"m","stream":true}`, `{"a":[1,{"b":"x\"}"}],"c":null}`, ` { "k" : "v\\" } `, `{}`, `[1,2]`, `{"a":`, `{"a":"\u00e9"}`, `{"x":{"y":[[]]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got := map[string]string{}
		ok := jsonscan.EachMember(in, func(k string, vs, ve int) bool {
			got[k] = string(in[vs:ve])
			return true
		})
		jsonscan.SkipValue(in, 0)
		jsonscan.EachElement(in, func(vs, ve int) bool { return true })
		wirefmt.HasTypedRaw(in, map[string]bool{"image_url": true}, 0)
		var h bytes.Buffer
		wirefmt.CanonHash(&h, in, "cache_control", 0)
		var want map[string]json.RawMessage
		if !json.Valid(in) || json.Unmarshal(in, &want) != nil || want == nil {
			return
		}
		if !ok {
			t.Fatalf("valid object %q not scanned", in)
		}
		for k, v := range want {
			var a, b bytes.Buffer
			_ = json.Compact(&a, v)
			_ = json.Compact(&b, []byte(got[k]))
			if _, seen := got[k]; !seen || a.String() != b.String() {
				// Duplicate keys: encoding/json keeps the last, EachMember
				// reports each; the last one wins in got as well.
				t.Fatalf("key %q: scanner %q, encoding/json %q", k, got[k], v)
			}
		}
	})
}

func TestJSONScan(t *testing.T) {
	t.Run("POOL-5/content-hash-ignores-key-order-whitespace-cache-control", func(t *testing.T) {
		a := neutral.ContentHash([]byte(`"sys"`), []byte(`[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]`))
		b := neutral.ContentHash([]byte(` "sys" `), []byte(`[ {"text": "hi", "type": "text"} ]`))
		c := neutral.ContentHash([]byte(`"sys"`), []byte(`[{"type":"text","text":"ho"}]`))
		if a != b || a == c {
			t.Fatalf("%s %s %s", a, b, c)
		}
	})
	t.Run("POOL-12/typed-part-found-nested", func(t *testing.T) {
		types := map[string]bool{"image_url": true}
		if !chat.HasTypedPart([]byte(`[{"type":"tool","content":[{"type":"image_url","image_url":{"url":"x"}}]}]`), types) ||
			chat.HasTypedPart([]byte(`[{"type":"text","text":"image_url"}]`), types) {
			t.Fatal("hasTypedPart")
		}
	})
}
