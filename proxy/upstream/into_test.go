package upstream

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// TestSendInto: responses read into one Request.Into, one after another,
// carry nothing of the one before (SPEC HTTP-4, HTTP-5: framing, fields
// and the body's end are each answer's own), and the connection is pooled
// and reused across them as without Into.
func TestSendInto(t *testing.T) {
	answers := []string{
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\nX-B: 2\r\nX-C: 3\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nabc",
		"HTTP/1.1 204 No Content\r\nX-D: 4\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
	}
	accepted := make(chan struct{}, 4)
	addr := testkit.ServeConns(t, func(c net.Conn) {
		accepted <- struct{}{}
		br := bufio.NewReader(c)
		for _, a := range answers {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			if _, err := io.WriteString(c, a); err != nil {
				return
			}
		}
	})
	c := newTestClient()
	defer c.CloseIdle()
	var into Response
	r := getRequest(addr)
	r.Into = &into
	want := []struct {
		status  int
		fields  int
		body    string
		chunked bool
		close   bool
	}{
		{200, 4, "hello", true, false},
		{201, 1, "abc", false, false},
		{204, 1, "", false, false},
		{200, 2, "hi", false, true},
	}
	for i, w := range want {
		t.Run("HTTP-5/into-carries-nothing-over/"+http.StatusText(w.status), func(t *testing.T) {
			res := c.Send(context.Background(), candidate.Direct, r, nil, time.Second, true)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if res.Resp != &into {
				t.Fatalf("answer %d not read into Request.Into", i)
			}
			b, err := io.ReadAll(res.Resp.Body)
			res.Resp.Body.Close()
			if err != nil || string(b) != w.body || into.StatusCode != w.status || len(into.Fields) != w.fields ||
				into.Chunked != w.chunked || into.Close != w.close {
				t.Fatalf("answer %d: %q %v, head %+v", i, b, err, into.ResponseHead)
			}
		})
	}
	if n := len(accepted); n != 1 {
		t.Fatalf("%d connections, want 1 (each answer pooled it for the next)", n)
	}
}
