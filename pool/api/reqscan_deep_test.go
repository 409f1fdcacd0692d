package api

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
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
		body := deepBody(jsonscan.MaxDepth - 4)
		if !jsonscan.Valid(body) {
			t.Fatal("jsonscan.Valid rejected a body within the nesting limit")
		}
		var before, during runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		done := make(chan bool)
		go func() {
			ok := jsonscan.Valid(body)
			runtime.ReadMemStats(&during) // this goroutine's stack still as grown
			done <- ok
		}()
		if !<-done {
			t.Fatal("jsonscan.Valid rejected a body within the nesting limit")
		}
		if grown := int64(during.StackInuse) - int64(before.StackInuse); grown > 256<<10 {
			t.Fatalf("stacks grew by %d KiB validating a %d-deep body", grown>>10, jsonscan.MaxDepth-4)
		}
	})
}

// TestDeepValueLimit: at and around encoding/json's nesting limit the
// scanner's verdict is json.Valid's, for arrays and objects alike (SPEC
// POOL-17; the scanner falls back to json.Unmarshal on any doubt).
func TestDeepValueLimit(t *testing.T) {
	t.Run("POOL-17/deep-values-at-the-limit-judged-as-json-valid", func(t *testing.T) {
		for n := jsonscan.MaxDepth - 3; n <= jsonscan.MaxDepth+1; n++ {
			for _, body := range [][]byte{deepBody(n), deepBody(2*n - 6), []byte(strings.Repeat(`{"a":[`, n/2) + strings.Repeat("]}", n/2))} {
				if got, want := jsonscan.Valid(body), json.Valid(body); got != want {
					t.Fatalf("n=%d: jsonscan.Valid %v, json.Valid %v", n, got, want)
				}
			}
		}
	})
}

// BenchmarkValidJSONDeep validates a body nested to the limit on a fresh
// goroutine each time, as a request handler does.
func BenchmarkValidJSONDeep(b *testing.B) {
	body := deepBody(jsonscan.MaxDepth - 4)
	b.SetBytes(int64(len(body)))
	done := make(chan bool)
	for b.Loop() {
		go func() { done <- jsonscan.Valid(body) }()
		if !<-done {
			b.Fatal("rejected")
		}
	}
}
