package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/chat"

	"github.com/dual-proxy/dual-proxy/pool/api/anthropic"
	"github.com/dual-proxy/dual-proxy/pool/api/responses"
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

// wireScanCase is one flavour's request struct, scanned and unmarshalled.
type wireScanCase struct {
	name string
	Scan func(b []byte) (v any, ok bool)
	std  func(b []byte) (v any, err error)
}

var wireScanCases = []wireScanCase{
	{"anthropic",
		func(b []byte) (any, bool) { var r anthropic.AnthropicRequest; ok := r.Scan(b); return r, ok },
		func(b []byte) (any, error) {
			var r anthropic.AnthropicRequest
			err := json.Unmarshal(b, &r)
			return r, err
		}},
	{"chat",
		func(b []byte) (any, bool) { var r chat.ChatCall; ok := r.Scan(b); return r, ok },
		func(b []byte) (any, error) { var r chat.ChatCall; err := json.Unmarshal(b, &r); return r, err }},
	{"responses",
		func(b []byte) (any, bool) { var r responses.ResponsesRequest; ok := r.Scan(b); return r, ok },
		func(b []byte) (any, error) {
			var r responses.ResponsesRequest
			err := json.Unmarshal(b, &r)
			return r, err
		}},
	{"message_start usage",
		func(b []byte) (any, bool) { var r anthropic.StartUsage; ok := r.Scan(b); return r, ok },
		func(b []byte) (any, error) { var r anthropic.StartUsage; err := json.Unmarshal(b, &r); return r, err }},
	{"message_delta usage",
		func(b []byte) (any, bool) { var r anthropic.DeltaUsage; ok := r.Scan(b); return r, ok },
		func(b []byte) (any, error) { var r anthropic.DeltaUsage; err := json.Unmarshal(b, &r); return r, err }},
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
		for _, c := range wireScanCases {
			got, ok := c.Scan(in)
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
			for _, c := range wireScanCases[:3] {
				if _, ok := c.Scan([]byte(s)); !ok {
					t.Errorf("seed %d: %s scanner gave up", i, c.name)
				}
			}
		}
	})
	t.Run("POOL-13b/usual-usage-events-are-scanned", func(t *testing.T) {
		for i, s := range usageSeeds {
			for _, c := range wireScanCases[3:] {
				if _, ok := c.Scan([]byte(s)); !ok {
					t.Errorf("usage seed %d: %s scanner gave up", i, c.name)
				}
			}
		}
	})
}

// TestScanHostileBodies: the one-pass request scanner (reqscan.go) with
// hostile but valid (or nearly valid) bodies: it decodes what
// json.Unmarshal decodes, and no body costs it much more than
// json.Unmarshal's two passes.
func TestScanHostileBodies(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	many := func(n int, m string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = m
		}
		return strings.Join(parts, ",")
	}
	bodies := map[string]string{
		"deep-content-at-the-limit":      `{"model":"m","messages":[{"role":"user","content":` + deep(9997) + `}]}`,
		"deep-content-over-the-limit":    `{"model":"m","messages":[{"role":"user","content":` + deep(9998) + `}]}`,
		"deep-unknown-member":            `{"model":"m","x":` + deep(9999) + `}`,
		"deep-unknown-member-over":       `{"model":"m","x":` + deep(10000) + `}`,
		"escapes-everywhere":             `{"model":"\u006d\ud83d\ude00","stream":true,"messages":[{"role":"\u0075ser","content":"` + strings.Repeat(`\u0041\n\"`, 20000) + `"}]}`,
		"many-messages":                  `{"model":"m","messages":[` + many(20000, `{"role":"user","content":"x"}`) + `]}`,
		"many-messages-duplicate-role":   `{"model":"m","messages":[` + many(10000, `{"role":"user","content":"x","role":"assistant"}`) + `]}`,
		"many-messages-case-folded-key":  `{"model":"m","messages":[` + many(10000, `{"ROLE":"user","Content":[1,2]}`) + `]}`,
		"many-null-messages":             `{"model":"m","messages":[` + many(20000, `null`) + `]}`,
		"duplicate-model-last-wins":      `{"model":"a","stream":false,"model":"b"}`,
		"kelvin-sign-key":                `{"model":"m","\u212aey":1,"stream":true,"ſtream":false}`,
		"utf8-invalid-in-strings":        "{\"model\":\"m\xff\",\"messages\":[{\"role\":\"us\xc3\",\"content\":\"\xed\xa0\x80\"}]}",
		"max-tokens-forms":               `{"model":"m","max_tokens":-0,"max_output_tokens":1e2,"thinking":{"budget_tokens":9223372036854775807}}`,
		"max-tokens-overflow":            `{"model":"m","max_tokens":9223372036854775808}`,
		"whitespace-everywhere":          " \t\r\n{ \"model\" \n: \"m\" , \"messages\" : [ { \"role\" : \"user\" , \"content\" : [ ] } ] , \"metadata\" : { \"user_id\" : null } } \n",
		"metadata-odd":                   `{"model":"m","metadata":{"user_id":"u","user_id2":{"a":[1,{"b":null}]}},"output_config":null,"reasoning":{"effort":"high","x":1}}`,
		"trailing-garbage":               `{"model":"m"} x`,
		"two-objects":                    `{"model":"m"}{"model":"n"}`,
		"top-level-array":                `[{"model":"m"}]`,
		"top-level-null":                 `null`,
		"nul-byte-in-key":                "{\"mo\x00del\":\"m\"}",
		"unterminated-escape-at-the-end": `{"model":"m\`,
		"number-forms":                   `{"model":"m","x":[-0.0e+1,0,1E-9,-1.5]}`,
		"bad-numbers":                    `{"model":"m","x":[01]}`,
	}
	for name, b := range bodies {
		t.Run("POOL-5/"+name, func(t *testing.T) {
			for _, c := range wireScanCases {
				// The fastest of three scans, so one descheduling on a busy
				// machine is not read as a slow body (a run at load 15 once
				// read 1.07 s); a pathological input is slow
				// every time.
				var got any
				var ok bool
				scan := time.Duration(1<<63 - 1)
				for range 3 {
					start := time.Now()
					got, ok = c.Scan([]byte(b))
					scan = min(scan, time.Since(start))
				}
				start := time.Now()
				want, err := c.std([]byte(b))
				std := time.Since(start)
				if ok && (err != nil || !reflect.DeepEqual(got, want)) {
					t.Fatalf("%s: scan decoded a body json.Unmarshal %v / fills differently", c.name, err)
				}
				if scan > 4*std+500*time.Millisecond { // wide: CI is a busy 2-core box
					t.Errorf("%s: scan took %v, json.Unmarshal %v", c.name, scan, std)
				}
			}
		})
	}
}
