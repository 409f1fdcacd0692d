// Micro-benchmarks of the hot request path: the raw request-head parser
// (SPEC HTTP-5: every field line is seen, framing checked) and hop-by-hop
// filtering (RFC 9110 §7.6.1), on a small head and on a realistic agent
// head with Connection-named fields.
//
//	go test -run '^$' -bench 'ReadRequestHead|RemoveHopByHop' -benchmem ./internal/httpmsg

package httpmsg

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
)

var benchHeads = map[string]string{
	"small": "GET http://127.0.0.1:8080/ HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
	"agent": "POST http://api.example.test/v1/messages?beta=true HTTP/1.1\r\nHost: api.example.test\r\n" +
		"Connection: keep-alive, X-Hop-A, X-Hop-B\r\nX-Hop-A: 1\r\nX-Hop-B: 2\r\nProxy-Connection: keep-alive\r\n" +
		"User-Agent: claude-cli/2.1.197 (external, sdk-cli)\r\nContent-Type: application/json\r\nContent-Length: 2\r\n" +
		"anthropic-version: 2023-06-01\r\nanthropic-beta: claude-code-20250219,context-1m-2025-08-07\r\n" +
		"X-Stainless-Lang: js\r\nX-Stainless-Package-Version: 0.94.0\r\nX-Stainless-OS: Linux\r\nX-Stainless-Arch: x64\r\n" +
		"X-Stainless-Runtime: node\r\nX-Stainless-Runtime-Version: v26.3.0\r\nX-Stainless-Retry-Count: 0\r\n" +
		"X-Claude-Code-Session-Id: 6f1c1a52-6a57-4c55-9a0e-1f2b3c4d5e6f\r\nTE: trailers\r\nx-app: cli\r\n\r\n",
}

func BenchmarkReadRequestHead(b *testing.B) {
	for name, head := range benchHeads {
		b.Run(name, func(b *testing.B) {
			src := []byte(head)
			r := bytes.NewReader(src)
			br := bufio.NewReaderSize(r, 4096)
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r.Reset(src)
				br.Reset(r)
				h, err := ReadRequestHead(br)
				if err != nil || h.Method == "" {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRemoveHopByHop(b *testing.B) {
	for name, head := range benchHeads {
		b.Run(name, func(b *testing.B) {
			h, err := ReadRequestHead(bufio.NewReader(strings.NewReader(head)))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				hdr := make(http.Header, len(h.Fields))
				for _, f := range h.Fields {
					hdr.Add(f.Name, f.Value)
				}
				RemoveHopByHop(hdr)
				if _, ok := hdr["X-Hop-A"]; ok {
					b.Fatal("Connection-named field kept")
				}
			}
		})
	}
}
