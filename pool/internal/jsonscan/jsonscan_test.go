package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// skipStringRef is SkipString in its plain byte-by-byte form:
// the first '"' or '\\' byte by byte, an escape skipping the next byte.
func skipStringRef(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexAny(b[j:], "\"\\")
		if k < 0 {
			return -1
		}
		j += k
		if b[j] == '"' {
			return j + 1
		}
		j += 2
	}
	return -1
}

// FuzzSkipString holds SkipString (SPEC POOL-17: the scanner that walks a
// request body in place, eight bytes at a time) to the
// byte-by-byte rule at every start offset of any input.
func FuzzSkipString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"x`, `"0123456789abcdef\\"`, `"0123456\"89abcdef\\\"x"`, `"unterminated`,
		`"ends in a backslash\`, `"` + "\x00\x7f\xff" + `0123456789"`, `"12345678"`, `"1234567\"`} {
		f.Add([]byte(s))
	}
	long := strings.Repeat("long prompt ", 5) // past the short strings' 40 bytes
	for _, s := range []string{`"` + long + `"`, `"` + long + `\"x"`, `"` + long + `\\"x`, `"` + long + `\\\"x\\\\"`,
		`"` + long + `a\` + `"`, `"` + long, `"` + long + `\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for i := range b {
			if got, want := SkipString(b, i), skipStringRef(b, i); got != want {
				t.Fatalf("POOL-17/skip-string: SkipString(%q, %d) = %d, the byte-by-byte rule says %d", b, i, got, want)
			}
		}
	})
}

// TestSkipStringEveryOffset: a '"' or '\\' at every offset mod 8, after
// ASCII, multibyte UTF-8, invalid UTF-8 and high bytes (which set the SWAR
// test's borrow bits), at the buffer's end or not, agrees with the
// byte-by-byte rule.
func TestSkipStringEveryOffset(t *testing.T) {
	t.Run("POOL-17/skip-string-every-offset", func(t *testing.T) {
		fills := []string{"a", "é", "\xff", "\x80", "✓", "\x00", "\x7f", "!", "[", "]"}
		for _, fill := range fills {
			for n := range 24 {
				pre := strings.Repeat(fill, n)
				for _, tail := range []string{`"`, `\"x"`, `\\"`, `\u0022"`, `\`, ``, `"` + strings.Repeat("z", 9)} {
					b := []byte(`"` + pre + tail)
					for i := range b {
						if got, want := SkipString(b, i), skipStringRef(b, i); got != want {
							t.Fatalf("SkipString(%q, %d) = %d, byte-by-byte %d", b, i, got, want)
						}
					}
				}
			}
		}
	})
}

// FuzzValid: the scanner's validation is json.Valid (SPEC POOL-1: a
// body that is not JSON is the client's 400), on any input.
func FuzzValid(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := Valid(in), json.Valid(in); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", in, got, want)
		}
	})
}

// TestValidNestedAgreesWithJSONValid: Valid's own stack of closers
// agrees with json.Valid around its 64-level buffer's growth and for a
// wrong closer, a missing one, a trailing comma or a stray value at every
// level of a mixed nest.
func TestValidNestedAgreesWithJSONValid(t *testing.T) {
	t.Run("POOL-17/valid-nested-agrees-with-json-valid", func(t *testing.T) {
		for _, n := range []int{1, 2, 63, 64, 65, 66, 129} {
			var open, closeAll []string
			for k := range n {
				if k%2 == 0 {
					open, closeAll = append(open, `{"k`+strings.Repeat(`\"`, k%3)+`": `), append([]string{"}"}, closeAll...)
				} else {
					open, closeAll = append(open, "[1, "), append([]string{"]"}, closeAll...)
				}
			}
			good := strings.Join(open, "") + `"v"` + strings.Join(closeAll, "")
			bodies := []string{good, good[:len(good)-1], good + "]", good + " ", "[" + good + "," + good + "]"}
			for k := range n {
				c := []string(append([]string(nil), closeAll...))
				c[k] = map[string]string{"}": "]", "]": "}"}[c[k]]
				bodies = append(bodies, strings.Join(open, "")+`"v"`+strings.Join(c, ""))
				c[k] = "," + closeAll[k]
				bodies = append(bodies, strings.Join(open, "")+`"v"`+strings.Join(c, ""))
				c[k] = ` 2` + closeAll[k]
				bodies = append(bodies, strings.Join(open, "")+`"v"`+strings.Join(c, ""))
			}
			for _, b := range bodies {
				if got, want := Valid([]byte(b)), json.Valid([]byte(b)); got != want {
					t.Fatalf("depth %d: Valid %v, json.Valid %v for\n%s", n, got, want, b)
				}
			}
		}
	})
}

// TestWordTests: the word-at-a-time tests of the string encoder and of
// plainString flag a word exactly when one of its bytes is one the
// byte-by-byte rule stops at, for every byte value at every position
// (SPEC POOL-21: a translated text is carried unchanged).
func TestWordTests(t *testing.T) {
	for c := 0; c < 256; c++ {
		escaped := c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&'
		plain := c >= 0x20 && c != '"' && c != '\\'
		for k := 0; k < 8; k++ {
			for _, fill := range []uint64{'a', ' ', '~', '=', '?', '%', '\'', 0x7f} {
				x := Lo*fill&^(0xff<<(8*k)) | uint64(c)<<(8*k)
				if got := EscapedBytes(x) != 0; got != escaped {
					t.Fatalf("POOL-21/word-test: EscapedBytes: byte %#x at %d among %q: %v, want %v", c, k, rune(fill), got, escaped)
				}
				if got := PlainWord(x); got != plain {
					t.Fatalf("POOL-21/word-test: PlainWord: byte %#x at %d among %q: %v, want %v", c, k, rune(fill), got, plain)
				}
			}
		}
	}
}

// validSeeds are request bodies and stream events of every API, valid and
// not (escapes, folded and repeated keys, numbers, nesting at the limit).
var validSeeds = []string{
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

// FuzzSkipValid holds SkipValid (SPEC POOL-21: the top-level key walk over
// a body json.Unmarshal already took) to the value's end: on valid JSON,
// the value at the first non-space byte ends where the trailing
// whitespace begins, at any depth, and so does each member of an object.
func FuzzSkipValid(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(strings.Repeat("[", 300) + strings.Repeat("]", 300)))
	f.Add([]byte(`{"a":"x\"}","b":[1,{"c":null}] , "d" : -1.5e3}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		i := SkipWS(in, 0)
		if got, want := SkipValid(in, i), len(bytes.TrimRight(in, " \t\r\n")); got != want {
			t.Fatalf("POOL-21/skip-valid: SkipValid(%q, %d) = %d, the value ends at %d", in, i, got, want)
		}
		var members map[string]json.RawMessage
		if in[i] != '{' || json.Unmarshal(in, &members) != nil {
			return
		}
		for j := SkipWS(in, i+1); j < len(in) && in[j] == '"'; {
			vs := SkipWS(in, SkipWS(in, SkipString(in, j))+1)
			ve := SkipValid(in, vs)
			if !json.Valid(in[vs:ve]) {
				t.Fatalf("POOL-21/skip-valid: member value %q of %q is not one value", in[vs:ve], in)
			}
			if j = SkipWS(in, ve); j < len(in) && in[j] == ',' {
				j = SkipWS(in, j+1)
			}
		}
	})
}
