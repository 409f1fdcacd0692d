package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/internal/wiretest"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// jsonStringSeeds are strings whose encoding/json form has every escape
// Marshal writes.
var jsonStringSeeds = wiretest.StringSeeds

// FuzzAppendJSONString: the hand-written string encoder of the streamed
// deltas writes exactly the bytes json.Marshal writes (SPEC POOL-21: a
// translated event must not change the text it carries).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := wirefmt.AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("appendJSONString(%q) = %s, json.Marshal = %s", s, got[1:], want)
		}
	})
}

// FuzzTopKeys: for every body json.Unmarshal reads as an object (or null),
// the key scan of objectKeys finds the same keys with the same null-ness as
// the json.Unmarshal into a map it replaces (SPEC POOL-21: a key that
// cannot be translated is still refused).
func FuzzTopKeys(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"a":1,"b":null,"c":"x\"}","d":[1,{"e":null}],"f":{"g":"]"}}`,
		` { "model" : "m" , "stream" :true,"x":null , "x": 2 } `, `{"\u006dodel":"m","k\u00e9y":null,"\ud83d\ude00":[]}`,
		"{\"bad\xff\":1,\"t\":true,\"n\":-1.5e3}", `{"a":"\\","b":"\\\""}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want map[string]wirefmt.KeyOnly
		if json.Unmarshal(in, &want) != nil {
			return
		}
		got := wirefmt.TopKeys(in)
		if len(got) != len(want) {
			t.Fatalf("%q: keys %v, want %v", in, got, want)
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Fatalf("%q: key %q = %v (found %v), want %v", in, k, g, ok, v)
			}
		}
	})
}

// FuzzPlainString: a string token taken without json.Unmarshal
// (plainString, the request decode's fast path) has exactly the value
// json.Unmarshal gives it (SPEC POOL-21: translation keeps the text).
func FuzzPlainString(f *testing.F) {
	for _, s := range jsonStringSeeds {
		f.Add([]byte(`"` + s + `"`))
		b, _ := json.Marshal(s)
		f.Add(b)
	}
	f.Add([]byte(`"a"b"`))
	f.Add([]byte(`"unterminated`))
	f.Fuzz(func(t *testing.T, in []byte) {
		got, ok := wirefmt.PlainString(in)
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatalf("plainString(%q) = %q, but json.Unmarshal fails: %v", in, got, err)
		}
		if got != want {
			t.Fatalf("plainString(%q) = %q, json.Unmarshal = %q", in, got, want)
		}
	})
}

// TestRequestEncodersWriteTextOnce: the system prompt and message text of a
// translated request are written as json.Marshal writes the string (HTML
// escapes and all), now that the request is marshalled once instead of
// string by string and again as raw fields (SPEC POOL-21).
func TestRequestEncodersWriteTextOnce(t *testing.T) {
	for _, s := range jsonStringSeeds[1:] {
		want, _ := json.Marshal(s)
		r := &neutral.Request{Model: "m", System: []string{s}, Messages: []neutral.Message{{Role: neutral.RoleUser, Parts: []neutral.Part{{Kind: neutral.KindText, Text: s}}},
			{Role: neutral.RoleAssistant, Parts: []neutral.Part{{Kind: neutral.KindText, Text: s}}}}}
		for api, wantSub := range map[apikind.Kind]string{
			apikind.Chat:      `"messages":[{"role":"system","content":` + string(want) + `},{"role":"user","content":` + string(want) + `},{"role":"assistant","content":` + string(want) + `}]`,
			apikind.Anthropic: `"messages":[{"role":"user","content":[{"type":"text","text":` + string(want) + `}]},{"role":"assistant","content":[{"type":"text","text":` + string(want) + `}]}],"system":` + string(want),
		} {
			t.Run("POOL-21/request-text-exact-"+string(api), func(t *testing.T) {
				got, err := EncodeRequest(api, r)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(got), wantSub) {
					t.Errorf("%q:\n got %s\nwant …%s…", s, got, wantSub)
				}
			})
		}
	}
}
