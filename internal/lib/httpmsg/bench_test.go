// Micro-benchmarks of the hot request path: the raw request-head parser
// (SPEC HTTP-5: every field line is seen, framing checked) and hop-by-hop
// filtering (RFC 9110 §7.6.1), on a small head and on a realistic agent
// head with Connection-named fields.
//
//	go test -run '^$' -bench 'ReadRequestHead|RemoveHopByHop' -benchmem ./internal/lib/httpmsg

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

// benchResponse is an LLM API's JSON answer head.
const benchResponse = "HTTP/1.1 200 OK\r\nDate: Tue, 01 Dec 2026 14:00:00 GMT\r\nContent-Type: application/json\r\n" +
	"Content-Length: 27\r\nConnection: keep-alive\r\nanthropic-ratelimit-requests-limit: 4000\r\n" +
	"anthropic-ratelimit-requests-remaining: 3999\r\nanthropic-ratelimit-tokens-limit: 400000\r\n" +
	"request-id: req_011CV6kzD5Xb3s7uYq2Wz9aB\r\nvia: 1.1 google\r\ncf-cache-status: DYNAMIC\r\n" +
	"Server: cloudflare\r\nCF-RAY: 8f1e2d3c4b5a6978-FRA\r\n\r\n"

// BenchmarkReadResponseHead compares the response-head parser with
// net/http.ReadResponse (what proxy/upstream used before) on one head.
//
//	go test -run '^$' -bench 'ReadResponseHead' -benchmem ./internal/lib/httpmsg
func BenchmarkReadResponseHead(b *testing.B) {
	src := []byte(benchResponse)
	r := bytes.NewReader(src)
	br := bufio.NewReaderSize(r, 4096)
	b.Run("httpmsg", func(b *testing.B) {
		b.ReportAllocs()
		var h ResponseHead
		for i := 0; i < b.N; i++ {
			r.Reset(src)
			br.Reset(r)
			if err := ReadResponseHead(br, 1<<20, "GET", &h); err != nil || h.ContentLength != 27 {
				b.Fatal(err)
			}
		}
	})
	b.Run("net-http", func(b *testing.B) {
		b.ReportAllocs()
		req := &http.Request{Method: "GET"}
		for i := 0; i < b.N; i++ {
			r.Reset(src)
			br.Reset(r)
			if resp, err := http.ReadResponse(br, req); err != nil || resp.ContentLength != 27 {
				b.Fatal(err)
			}
		}
	})
}
