// Package wiretest holds what the tests of the wire API packages
// (pool/api and one package per API) share: seeds that exercise every
// escape of JSON's strings and the shapes a hand-written decoder must give
// up on, and the checks that such a decoder reads exactly what
// json.Unmarshal reads (SPEC POOL-21: a translated request or event carries
// the client's text unchanged). Only tests import it.
package wiretest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// StringSeeds are strings whose encoding/json form has every escape
// Marshal writes, and strings long enough for the word-at-a-time paths with
// a special byte at each offset of a word.
var StringSeeds = []string{"", "Hello there, ", `q"uote\back`, "<tag> & amp", "\b\f\n\r\t\x00\x01\x1f\x7f",
	"ü ✓ 😀", "line\u2028sep\u2029", "bad \xff utf-8 \xc3", "tail\xe2\x80", strings.Repeat("x", 300),
	"0123456789abcdef<0123456", "01234567\"9abcdef", "0123456789abc\\", "0123456\x1f89abcdefgh", "01234567ü9abcdefgh",
	"0123456789abcde\u2028fgh", "01234567&", "0123456789abcdef\xff0123456789"}

// SameJSON reports whether a and b are both JSON and the same value,
// whatever their members' order and spacing.
func SameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// RequestSeeds are request bodies of every API, with the shapes a one-pass
// scanner must give up on (escaped, folded and repeated keys, type errors,
// numbers that are not ints) next to the ones it decodes; the last five are
// events of Anthropic's stream and their usage.
var RequestSeeds = []string{
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

// UsageSeeds are the message_start and message_delta seeds of RequestSeeds.
var UsageSeeds = RequestSeeds[len(RequestSeeds)-5 : len(RequestSeeds)-3]

// HostileBodies are request bodies, by name, that are hostile but valid (or
// nearly valid): nesting at and over encoding/json's limit, escapes
// everywhere, tens of thousands of messages, repeated and case-folded keys,
// odd numbers and trailing garbage.
func HostileBodies() map[string]string {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	many := func(n int, m string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = m
		}
		return strings.Join(parts, ",")
	}
	return map[string]string{
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
}

// ScanCase is one wire struct's one-pass decoder next to json.Unmarshal of
// the same struct: Scan reports false when it gives the body up.
type ScanCase struct {
	Name string
	Scan func(b []byte) (v any, ok bool)
	Std  func(b []byte) (v any, err error)
}

// CheckScan fails t when a case's scanner decodes in but json.Unmarshal
// refuses it or fills the struct differently.
func CheckScan(t *testing.T, cases []ScanCase, in []byte) {
	t.Helper()
	for _, c := range cases {
		got, ok := c.Scan(in)
		if !ok {
			continue
		}
		want, err := c.Std(in)
		if err != nil {
			t.Fatalf("%s: scanned %q, json.Unmarshal: %v", c.Name, in, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %q\nscan      %#v\nUnmarshal %#v", c.Name, in, got, want)
		}
	}
}

// CheckScanHostile fails t when a case's scanner decodes body other than
// json.Unmarshal does, or takes much longer than json.Unmarshal's two
// passes over it.
func CheckScanHostile(t *testing.T, cases []ScanCase, body string) {
	t.Helper()
	for _, c := range cases {
		// The fastest of three scans, so one descheduling on a busy
		// machine is not read as a slow body (a run at load 15 once
		// read 1.07 s); a pathological input is slow
		// every time.
		var got any
		var ok bool
		scan := time.Duration(1<<63 - 1)
		for range 3 {
			start := time.Now()
			got, ok = c.Scan([]byte(body))
			scan = min(scan, time.Since(start))
		}
		start := time.Now()
		want, err := c.Std([]byte(body))
		std := time.Since(start)
		if ok && (err != nil || !reflect.DeepEqual(got, want)) {
			t.Fatalf("%s: scan decoded a body json.Unmarshal %v / fills differently", c.Name, err)
		}
		if scan > 4*std+500*time.Millisecond { // wide: CI is a busy 2-core box
			t.Errorf("%s: scan took %v, json.Unmarshal %v", c.Name, scan, std)
		}
	}
}
