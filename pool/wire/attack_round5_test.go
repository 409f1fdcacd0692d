package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Attack round five: the one-pass request scanner (reqscan.go) with
// hostile but valid (or nearly valid) bodies: it decodes what
// json.Unmarshal decodes, and no body costs it much more than
// json.Unmarshal's two passes.
func TestAttackRound5Scan(t *testing.T) {
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
			for _, c := range scanCases {
				// The fastest of three scans, so one descheduling on a busy
				// machine is not read as a slow body (a TestAttackRound5Scan run
				// at load 15 once read 1.07 s); a pathological input is slow
				// every time.
				var got any
				var ok bool
				scan := time.Duration(1<<63 - 1)
				for range 3 {
					start := time.Now()
					got, ok = c.scan([]byte(b))
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

// TestAttackRound5Usage: the Anthropic watcher's usage scan (b733d0e) reads
// the numbers json.Unmarshal reads, whatever the event's shape (SPEC
// POOL-13b: the cache accounting).
func TestAttackRound5Usage(t *testing.T) {
	events := []string{
		`{"type":"message_start","message":{"id":"x","usage":{"input_tokens":10,"cache_read_input_tokens":30},"content":[{"usage":{"input_tokens":99}}]}}`,
		`{"type":"message_start","usage":{"input_tokens":99},"message":{"usage":{"input_tokens":1}}}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":1,"input_tokens":2}}}`,
		`{"type":"message_start","message":{"usage":{"Input_Tokens":7}}}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":null,"output_tokens":-3}}}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":1e1}}}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":9223372036854775807}}}`,
		`{"type":"message_start","message":null}`,
		`{"type":"message_start","message":{"usage":[1]}}`,
		`{"type":"message_delta","delta":{"usage":{"output_tokens":99}},"usage":{"output_tokens":5}}`,
		`{"type":"message_delta","usage":{"output_tokens":5},"usage":{"output_tokens":6}}`,
		`{"type":"message_delta","usage":{"output_tokens":5,"extra":{"a":[{"b":` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `}]}}}`,
		`{"type":"message_delta","usage":{"output_tokens":"5"}}`,
		`{"type":"message_delta","usage":{"\u006futput_tokens":5}}`,
	}
	for i, e := range events {
		for _, c := range []struct {
			name string
			scan func([]byte) (any, error)
			std  func([]byte) (any, error)
		}{
			{"start", func(b []byte) (any, error) { var v startUsage; err := decodeRequest(b, &v); return v, err },
				func(b []byte) (any, error) { var v startUsage; err := json.Unmarshal(b, &v); return v, err }},
			{"delta", func(b []byte) (any, error) { var v deltaUsage; err := decodeRequest(b, &v); return v, err },
				func(b []byte) (any, error) { var v deltaUsage; err := json.Unmarshal(b, &v); return v, err }},
		} {
			got, gerr := c.scan([]byte(e))
			want, werr := c.std([]byte(e))
			if (gerr == nil) != (werr == nil) || (gerr == nil && !reflect.DeepEqual(got, want)) {
				t.Errorf("POOL-13b/event %d %s: scan %+v %v, json.Unmarshal %+v %v", i, c.name, got, gerr, want, werr)
			}
		}
	}
}
