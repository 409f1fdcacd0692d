package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// reqSeeds are request bodies of every flavour, with the shapes the scanner
// must give up on (escaped, folded and repeated keys, type errors, numbers
// that are not ints) next to the ones it decodes.
var reqSeeds = []string{
	`{"model":"m","stream":true,"max_tokens":1024,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","metadata":{"user_id":"{\"session_id\":\"abc\"}"},"thinking":{"type":"enabled","budget_tokens":2048},"output_config":{"effort":"high"}}`,
	`{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{}}]},null,{"role":"assistant"}]}`,
	`{"model":"m","max_completion_tokens":5,"reasoning_effort":"low","prompt_cache_key":"k","messages":[{"role":"system","content":"s"}]}`,
	`{"model":"m","input":[{"type":"message","role":"user","content":"x"}],"instructions":"i","previous_response_id":"r","reasoning":{"effort":"high"},"max_output_tokens":9}`,
	` {"model" : "caf\u00e9" , "stream" : false , "messages" : [ ] } `,
	`{"model":"m","Model":"n"}`, `{"mod\u0065l":"m"}`, `{"model":"m","model":"n"}`, `{"ſtream":true,"model":"m"}`,
	`{"model":5}`, `{"model":null}`, `{"max_tokens":1.5,"model":"m"}`, `{"max_tokens":1e3,"model":"m"}`,
	`{"max_tokens":99999999999999999999,"model":"m"}`, `{"max_tokens":"5","model":"m"}`, `{"stream":"yes","model":"m"}`,
	`{"metadata":"x","model":"m"}`, `{"messages":{},"model":"m"}`, `{"messages":["x"],"model":"m"}`,
	`{"messages":[{"role":7}],"model":"m"}`, `{"model":"bad \xff utf-8"}`, `{"model":"m"} x`, `{"model":"m",}`,
	`[1]`, `null`, `"s"`, `{"a":01}`, `{"a":-}`, `{"a":"\x01"}`, `{"a":"\u12"}`, `{"a":"\q"}`, `{"a":tru}`,
	`{"a":[1,2,]}`, `{"a":1.}`, `{"a":1e}`, `{"a":-0.5e+7}`, "\ufeff{}", `{"a":"` + strings.Repeat("x\\\"", 20) + `"}`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":10,"cache_read_input_tokens":90,"cache_creation_input_tokens":0,"output_tokens":1}}}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":42}}`,
	`{"usage":{"input_tokens":null,"output_tokens":1.0}}`, `{"usage":{"output_tokens":-3,"Output_tokens":4}}`, `{"message":{"usage":null}}`,
}

// usageSeeds are the message_start and message_delta seeds of reqSeeds.
var usageSeeds = reqSeeds[len(reqSeeds)-5 : len(reqSeeds)-3]

// FuzzValidJSON: the scanner's validation is json.Valid (SPEC POOL-1: a
// body that is not JSON is the client's 400), on any input.
func FuzzValidJSON(f *testing.F) {
	for _, s := range reqSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := validJSON(in), json.Valid(in); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid %v", in, got, want)
		}
	})
}

// scanCase is one flavour's request struct, scanned and unmarshalled.
type scanCase struct {
	name string
	scan func(b []byte) (v any, ok bool)
	std  func(b []byte) (v any, err error)
}

var scanCases = []scanCase{
	{"anthropic",
		func(b []byte) (any, bool) { var r anthropicRequest; ok := r.scan(b); return r, ok },
		func(b []byte) (any, error) { var r anthropicRequest; err := json.Unmarshal(b, &r); return r, err }},
	{"chat",
		func(b []byte) (any, bool) { var r chatRequest; ok := r.scan(b); return r, ok },
		func(b []byte) (any, error) { var r chatRequest; err := json.Unmarshal(b, &r); return r, err }},
	{"responses",
		func(b []byte) (any, bool) { var r responsesRequest; ok := r.scan(b); return r, ok },
		func(b []byte) (any, error) { var r responsesRequest; err := json.Unmarshal(b, &r); return r, err }},
	{"message_start usage",
		func(b []byte) (any, bool) { var r startUsage; ok := r.scan(b); return r, ok },
		func(b []byte) (any, error) { var r startUsage; err := json.Unmarshal(b, &r); return r, err }},
	{"message_delta usage",
		func(b []byte) (any, bool) { var r deltaUsage; ok := r.scan(b); return r, ok },
		func(b []byte) (any, error) { var r deltaUsage; err := json.Unmarshal(b, &r); return r, err }},
}

// FuzzScanRequest: whenever the one-pass scanner decodes a request body, the
// body is one json.Unmarshal accepts and the struct is the one it fills
// (SPEC POOL-2, POOL-5: model, stream, session hints and content read as
// before), for every flavour and any input; the same for the usage of
// Anthropic's message_start and message_delta (POOL-13b cache accounting).
func FuzzScanRequest(f *testing.F) {
	for _, s := range reqSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, c := range scanCases {
			got, ok := c.scan(in)
			if !ok {
				continue
			}
			want, err := c.std(in)
			if err != nil {
				t.Fatalf("%s: scanned %q, json.Unmarshal: %v", c.name, in, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: %q\nscan      %#v\nUnmarshal %#v", c.name, in, got, want)
			}
		}
	})
}

// TestScanRequest: the usual request bodies take the one pass (the fallback
// would hide a scanner that never decodes anything; FuzzScanRequest's seeds
// check what it decodes).
func TestScanRequest(t *testing.T) {
	t.Run("POOL-5/usual-bodies-are-scanned", func(t *testing.T) {
		for i, s := range reqSeeds[:6] {
			for _, c := range scanCases[:3] {
				if _, ok := c.scan([]byte(s)); !ok {
					t.Errorf("seed %d: %s scanner gave up", i, c.name)
				}
			}
		}
	})
	t.Run("POOL-13b/usual-usage-events-are-scanned", func(t *testing.T) {
		for i, s := range usageSeeds {
			for _, c := range scanCases[3:] {
				if _, ok := c.scan([]byte(s)); !ok {
					t.Errorf("usage seed %d: %s scanner gave up", i, c.name)
				}
			}
		}
	})
}
