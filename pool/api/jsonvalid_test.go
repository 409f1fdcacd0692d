package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/anthropic"
	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/gemini"
	"github.com/dual-proxy/dual-proxy/pool/api/responses"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
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
		` { "model" : "m" , "messages" : [ { "role" : "user" , "content" : "hi" } ] } `, `null`, `[]`, `{}`,
		rsBenchRequest(2), gmUsualRequest,
		`{"id":"c","type":"function","function":{"name":"f","arguments":"{}"},"function":{"name":"g"},"Index":1}`,
		`{"type":"function","function":{"name":"f","parameters":{},"Strict":true},"tool_calls":[{"function":null}]}`,
		`{"role":"user","parts":[{"text":"a"},{"inlineData":{"mimeType":"image/png","data":"AA"}},{"thought":true,"thoughtSignature":"s"}]}`,
		`{"functionDeclarations":[{"name":"f","parametersJsonSchema":{},"Parameters":{}}],"functionDeclarations":[]}`,
		`{"type":"namespace","tools":[{"type":"function","name":"f","tools":[]}],"strict":1}`,
		`{"name":"f","input_schema":{},"strict":true,"role":"user","content":[{"type":"text"}]}`,
		`[{"type":"thinking","thinking":"a","signature":"s","thinking":"b"},{"type":"tool_result","content":[{"type":"text","text":"x"}],"is_error":true},{"Thinking":"c"}]`,
		`{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral","ttl":"1h"}}],"cache_control":{"type":"ephemeral"},"prompt_cache_key":"k","name":"f","input_schema":{}}`,
		`[{"type":"function_call","arguments":"{}","arguments":null},{"type":"reasoning","summary":[],"encrypted_content":"e"},{"type":"image_url","image_url":{"url":"u"}},{"annotations":[],"detail":"d"}]`} {
		out = append(out, []byte(s))
	}
	return out
}

// gmUsualRequest is a generateContent body of the usual fields.
const gmUsualRequest = `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]}],` +
	`"systemInstruction":{"parts":[{"text":"be brief"}]},"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT"}}]}],` +
	`"generationConfig":{"maxOutputTokens":100}}`

// wireTypes are the four APIs' request structs, fresh.
func wireTypes() []any {
	return []any{&anthropic.AnRequest{}, &chat.ChatRequest{}, &responses.RsRequest{}, &gemini.GmRequest{}}
}

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
		for _, v := range containers(in, nil, 0) {
			for _, c := range scanCases() {
				c.check(t, v)
			}
		}
	})
}

// containers are in (valid JSON) and the objects and arrays inside it, so
// that each decoder meets every nested value of a fuzzed body.
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

// wireScanCase is one wire struct's decoder with its JSON names, checked on
// its own against json.Unmarshal.
type scanCase struct {
	typ    reflect.Type
	fields []string
	check  func(t *testing.T, in []byte)
}

func newScanCase[T any](fields []string, scan func([]byte, *T) bool) scanCase {
	return scanCase{typ: reflect.TypeFor[T](), fields: fields, check: func(t *testing.T, in []byte) {
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

// wireScanCases are the decoders of every wire request struct.
func scanCases() []scanCase {
	return []scanCase{
		newScanCase(anthropic.AnRequestFields, func(b []byte, w *anthropic.AnRequest) bool { return anthropic.ScanAnRequest(b, w, nil) }),
		newScanCase(anthropic.AnMessageFields, anthropic.ScanAnMessage), newScanCase(anthropic.AnToolFields, anthropic.ScanAnTool),
		newScanCase(anthropic.AnBlockFields, anthropic.ScanAnBlock), newScanCase(chat.ChatContentPartFields, chat.ScanChatContentPart),
		newScanCase(responses.RsItemFields, responses.ScanRsItem), newScanCase(responses.RsContentFields, responses.ScanRsContent),
		newScanCase(chat.ChatRequestFields, func(b []byte, w *chat.ChatRequest) bool { return chat.ScanChatRequest(b, w, nil) }),
		newScanCase(chat.ChatMessageFields, chat.ScanChatMessage), newScanCase(chat.ChatToolCallFields, chat.ScanChatToolCall),
		newScanCase(chat.ChatCallFunctionFields, chat.ScanChatCallFunction), newScanCase(chat.ChatToolFields, chat.ScanChatTool),
		newScanCase(chat.ChatToolFunctionFields, chat.ScanChatToolFunction),
		newScanCase(responses.RsRequestFields, func(b []byte, w *responses.RsRequest) bool { return responses.ScanRsRequest(b, w, nil) }),
		newScanCase(responses.RsToolFields, responses.ScanRsTool),
		newScanCase(gemini.GmRequestFields, func(b []byte, w *gemini.GmRequest) bool { return gemini.ScanGmRequest(b, w, nil) }),
		newScanCase(gemini.GmContentFields, gemini.ScanGmContent), newScanCase(gemini.GmPartFields, gemini.ScanGmPart),
		newScanCase(gemini.GmToolFields, gemini.ScanGmTool), newScanCase(gemini.GmFuncFields, gemini.ScanGmFunc),
	}
}

// TestScanFieldsAreTheJSONNames: each decoder's list of JSON names is its
// struct's (json tags), none two equal ignoring case, so that a key
// naming a field only ignoring case is seen and left to json.Unmarshal
// (SPEC POOL-21).
func TestScanFieldsAreTheJSONNames(t *testing.T) {
	t.Run("POOL-21/scan-fields-are-the-json-names", func(t *testing.T) {
		for _, c := range scanCases() {
			var names []string
			for f := range c.typ.Fields() {
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				names = append(names, name)
			}
			if !reflect.DeepEqual(names, c.fields) {
				t.Errorf("%v: the decoder's names %q, the struct's %q", c.typ, c.fields, names)
			}
			for i, a := range names {
				for _, b := range names[i+1:] {
					if strings.EqualFold(a, b) {
						t.Errorf("%v: %q and %q are equal ignoring case", c.typ, a, b)
					}
				}
			}
		}
	})
}

func checkDecodeValid(t *testing.T, in []byte) {
	t.Helper()
	for _, typ := range wireTypes() {
		want := reflect.New(reflect.TypeOf(typ).Elem()).Interface()
		werr := json.Unmarshal(in, want)
		keys, ok := decodeValidAny(in, typ)
		if !ok {
			continue
		}
		if werr != nil {
			t.Fatalf("%T: decodeValid took %s, json.Unmarshal: %v", typ, in, werr)
		}
		if !reflect.DeepEqual(typ, want) {
			t.Fatalf("%T of %s:\n got %+v\nwant %+v", typ, in, typ, want)
		}
		if tk := wirefmt.TopKeys(in); !reflect.DeepEqual(keys, tk) {
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
		{benchRequest(), &anthropic.AnRequest{}}, {chatBenchRequest(), &chat.ChatRequest{}},
		{`{"model":"m","stream":true,"max_tokens":1024,"system":"` + system + `","messages":[{"role":"user","content":"say something"}]}`, &anthropic.AnRequest{}},
		{`{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"say something"}]}`, &chat.ChatRequest{}},
		{rsBenchRequest(3), &responses.RsRequest{}}, {gmUsualRequest, &gemini.GmRequest{}},
	} {
		t.Run("POOL-21/one-scan", func(t *testing.T) {
			if _, ok := decodeValidAny([]byte(c.body), c.w); !ok {
				t.Fatalf("%T: the usual body takes json.Unmarshal", c.w)
			}
		})
	}
}

// decodeValidAny is decodeValid of w, a pointer to one of the four APIs'
// request structs, by that struct's scan.
func decodeValidAny(body []byte, w any) (map[string]wirefmt.KeyOnly, bool) {
	switch w := w.(type) {
	case *anthropic.AnRequest:
		return wirefmt.DecodeValid(body, w, anthropic.ScanAnRequest)
	case *chat.ChatRequest:
		return wirefmt.DecodeValid(body, w, chat.ScanChatRequest)
	case *responses.RsRequest:
		return wirefmt.DecodeValid(body, w, responses.ScanRsRequest)
	case *gemini.GmRequest:
		return wirefmt.DecodeValid(body, w, gemini.ScanGmRequest)
	}
	return nil, false
}
