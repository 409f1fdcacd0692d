package wire

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// deepBody is a request whose unknown member nests n arrays, and nested
// objects inside the messages, up to encoding/json's limit (10,000).
func deepBody(n int) []byte {
	obj := strings.Repeat(`{"k":`, n/2) + "1" + strings.Repeat("}", n/2)
	return []byte(`{"model":"m","x":` + strings.Repeat("[", n) + strings.Repeat("]", n) +
		`,"messages":[{"role":"user","content":` + obj + `}]}`)
}

// TestDeepValueStack: validating a value nested to encoding/json's limit
// keeps the open containers on the scanner's own stack, not the
// goroutine's: a recursive walk grew a fresh goroutine's stack by ≈ 2 MiB,
// copied at every doubling (ms per request; SPEC POOL-17, memory).
func TestDeepValueStack(t *testing.T) {
	t.Run("POOL-17/deep-value-validated-without-stack-growth", func(t *testing.T) {
		body := deepBody(maxJSONDepth - 4)
		if !validJSON(body) {
			t.Fatal("validJSON rejected a body within the nesting limit")
		}
		var before, during runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		done := make(chan bool)
		go func() {
			ok := validJSON(body)
			runtime.ReadMemStats(&during) // this goroutine's stack still as grown
			done <- ok
		}()
		if !<-done {
			t.Fatal("validJSON rejected a body within the nesting limit")
		}
		if grown := int64(during.StackInuse) - int64(before.StackInuse); grown > 256<<10 {
			t.Fatalf("stacks grew by %d KiB validating a %d-deep body", grown>>10, maxJSONDepth-4)
		}
	})
}

// TestDeepValueLimit: at and around encoding/json's nesting limit the
// scanner's verdict is json.Valid's, for arrays and objects alike (SPEC
// POOL-17; the scanner falls back to json.Unmarshal on any doubt).
func TestDeepValueLimit(t *testing.T) {
	t.Run("POOL-17/deep-values-at-the-limit-judged-as-json-valid", func(t *testing.T) {
		for n := maxJSONDepth - 3; n <= maxJSONDepth+1; n++ {
			for _, body := range [][]byte{deepBody(n), deepBody(2*n - 6), []byte(strings.Repeat(`{"a":[`, n/2) + strings.Repeat("]}", n/2))} {
				if got, want := validJSON(body), json.Valid(body); got != want {
					t.Fatalf("n=%d: validJSON %v, json.Valid %v", n, got, want)
				}
			}
		}
	})
}

// BenchmarkValidJSONDeep validates a body nested to the limit on a fresh
// goroutine each time, as a request handler does.
func BenchmarkValidJSONDeep(b *testing.B) {
	body := deepBody(maxJSONDepth - 4)
	b.SetBytes(int64(len(body)))
	done := make(chan bool)
	for b.Loop() {
		go func() { done <- validJSON(body) }()
		if !<-done {
			b.Fatal("rejected")
		}
	}
}

// TestValidNestedAgreesWithJSONValid: validJSON's own stack of closers
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
				if got, want := validJSON([]byte(b)), json.Valid([]byte(b)); got != want {
					t.Fatalf("depth %d: validJSON %v, json.Valid %v for\n%s", n, got, want, b)
				}
			}
		}
	})
}
