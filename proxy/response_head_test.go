package proxy

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/proxy/upstream"
)

// FuzzAppendResponseHead checks the one-Write answer head against the
// piece-by-piece one (SPEC HTTP-5: hop-by-hop fields and the upstream's
// Content-Length dropped, a clean status line, our framing), and that
// respHeadBound bounds it.
func FuzzAppendResponseHead(f *testing.F) {
	f.Add(200, "OK", "Content-Type: text/plain\nContent-Length: 3", int64(3), false, false, false)
	f.Add(599, "Odd\x1b[2J reason", "Connection: x\nX: 1\nKeep-Alive: 5", int64(-1), true, false, true)
	f.Add(204, "", "", int64(-1), false, true, false)
	f.Add(200, strings.Repeat("r", 300), strings.Repeat("X-Long: "+strings.Repeat("v", 90)+"\n", 60), int64(1<<40), false, true, true)
	f.Fuzz(func(t *testing.T, status int, reason, fields string, length int64, chunked, closing, ka10 bool) {
		resp := &upstream.Response{}
		resp.StatusCode, resp.Reason = status, reason
		for line := range strings.SplitSeq(fields, "\n") {
			if name, value, ok := strings.Cut(line, ": "); ok {
				resp.Fields = append(resp.Fields, httpmsg.Field{Name: name, Value: value})
			}
		}
		hf := respFraming{length: length, chunked: chunked, close: closing, keepAlive10: ka10}
		var want bytes.Buffer
		bw := bufio.NewWriterSize(&want, 16)
		writeResponseHead(bw, resp, hf)
		bw.Flush()
		got := appendResponseHead(nil, resp, hf)
		if string(got) != want.String() {
			t.Fatalf("head\n%q\nwant\n%q", got, want.String())
		}
		if len(got) > respHeadBound(resp) {
			t.Fatalf("head of %d bytes over its bound %d", len(got), respHeadBound(resp))
		}
	})
}
