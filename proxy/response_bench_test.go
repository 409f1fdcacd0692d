// Micro-benchmark of the response side of plain forwarding: the
// upstream client reads the response head and body from a pooled
// connection, writeResponse writes status line, end-to-end fields (SPEC
// HTTP-5) and body to the client. The upstream connection is an in-memory
// fake that answers every request written with a canned response, so only
// the proxy's own work is measured (no syscalls, no other goroutine); the
// "-tcp" row uses a loopback origin instead.
//
//	go test -run '^$' -bench 'ResponseSide' -benchmem ./proxy

package proxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/upstream"
)

// benchAnswers are the canned upstream answers: the bench origin's small
// one, and an LLM API's JSON answer head with hop-by-hop fields.
var benchAnswers = map[string]string{
	"small": "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n",
	"api": "HTTP/1.1 200 OK\r\nDate: Tue, 01 Dec 2026 14:00:00 GMT\r\nContent-Type: application/json\r\n" +
		"Content-Length: 27\r\nConnection: keep-alive, X-Hop\r\nKeep-Alive: timeout=5\r\nX-Hop: 1\r\n" +
		"anthropic-ratelimit-requests-limit: 4000\r\nanthropic-ratelimit-requests-remaining: 3999\r\n" +
		"anthropic-ratelimit-requests-reset: 2026-12-01T14:00:01Z\r\nanthropic-ratelimit-tokens-limit: 400000\r\n" +
		"anthropic-ratelimit-tokens-remaining: 399000\r\nrequest-id: req_011CV6kzD5Xb3s7uYq2Wz9aB\r\n" +
		"anthropic-organization-id: 7c1f2a3b-4d5e-6f70-8192-a3b4c5d6e7f8\r\nvia: 1.1 google\r\n" +
		"cf-cache-status: DYNAMIC\r\nX-Robots-Tag: none\r\nServer: cloudflare\r\nCF-RAY: 8f1e2d3c4b5a6978-FRA\r\n\r\n" +
		`{"id":"msg_1","type":"ok"}` + "\n",
}

// answerConn is an upstream connection that answers each request (one
// Write per request: the client flushes once) with answer.
type answerConn struct {
	answer []byte
	r      bytes.Reader
	buf    []byte
}

func (c *answerConn) Read(p []byte) (int, error) {
	if c.r.Len() == 0 {
		return 0, io.EOF
	}
	return c.r.Read(p)
}

func (c *answerConn) Write(p []byte) (int, error) {
	c.buf = append(c.buf[:0], c.answer...)
	c.r.Reset(c.buf)
	return len(p), nil
}

func (c *answerConn) Close() error                     { return nil }
func (c *answerConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *answerConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *answerConn) SetDeadline(time.Time) error      { return nil }
func (c *answerConn) SetReadDeadline(time.Time) error  { return nil }
func (c *answerConn) SetWriteDeadline(time.Time) error { return nil }

// answerListener serves answer to every request head on loopback TCP
// connections (the "-tcp" rows: deadlines and the pool's socket peek are
// then real, syscalls included).
func answerListener(b *testing.B, answer []byte) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					for {
						l, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(l) == 2 {
							break
						}
					}
					if _, err := c.Write(answer); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func BenchmarkResponseSide(b *testing.B) {
	for _, name := range []string{"small", "api", "small-tcp"} {
		b.Run(name, func(b *testing.B) {
			answer := []byte(benchAnswers[strings.TrimSuffix(name, "-tcp")])
			dial := func(context.Context, candidate.Candidate, string) (net.Conn, error) {
				return &answerConn{answer: answer}, nil
			}
			if strings.HasSuffix(name, "-tcp") {
				addr := answerListener(b, answer)
				dial = func(ctx context.Context, _ candidate.Candidate, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
				}
			}
			cl := &upstream.Client{ResponseTimeout: time.Minute, Dial: dial}
			defer cl.CloseIdle()
			req := &upstream.Request{Method: "GET", Origin: "/", Absolute: "http://127.0.0.1:1/",
				Authority: "127.0.0.1:1", Addr: "127.0.0.1:1"}
			head := &httpmsg.RequestHead{Method: "GET", Minor: 1, KeepAlive: true}
			bw := bufio.NewWriterSize(io.Discard, 4096)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res := cl.Send(ctx, candidate.Direct, req, nil, time.Second, true)
				if res.Err != nil {
					b.Fatal(res.Err)
				}
				if ok, _ := writeResponse(bw, res.Resp, head); !ok {
					b.Fatal("response not delivered")
				}
				res.Resp.Body.Close()
			}
		})
	}
}
