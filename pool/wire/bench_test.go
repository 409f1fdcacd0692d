package wire

import (
	"strings"
	"testing"
)

// BenchmarkParseRequest is the pool's read of a client request (issue 20):
// scenario 7's bodies (bench/scen_pool.go), a 16 KiB system prompt and one
// user turn, in each client API.
func BenchmarkParseRequest(b *testing.B) {
	system := strings.Repeat("You are a coding agent; answer briefly. ", 16<<10/40)
	for _, c := range []struct {
		name string
		fl   Flavour
		body string
	}{
		{"anthropic", AnthropicFlavour{}, `{"model":"m","stream":true,"max_tokens":1024,"system":"` + system + `","messages":[{"role":"user","content":"say something"}]}`},
		{"chat", ChatFlavour{}, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"say something"}]}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			body := []byte(c.body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.fl.ParseRequest(Endpoint{Kind: EpGenerate}, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
