package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// answerOrigin answers every request on a connection with answer; when
// hangUp, it closes the connection after the first answer. It counts
// connections.
func answerOrigin(t *testing.T, answer string, hangUp bool) (string, *atomic.Int32) {
	t.Helper()
	conns := new(atomic.Int32)
	addr := testkit.ServeConns(t, func(c net.Conn) {
		conns.Add(1)
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			if _, err := io.WriteString(c, answer); err != nil || hangUp {
				return
			}
		}
	})
	return addr, conns
}

func TestWireBody(t *testing.T) {
	send := func(t *testing.T, c *Client, addr string) (*Response, error) {
		res := c.Send(context.Background(), candidate.Direct, getRequest(addr), nil, time.Second, true)
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Resp, nil
	}
	for _, tc := range []struct{ name, answer string }{
		{"HTTP-4/content-length-body-cut-short-is-an-error", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello"},
		{"HTTP-4/chunk-cut-short-is-an-error", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"},
		{"HTTP-4/trailer-section-cut-short-is-an-error", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := answerOrigin(t, tc.answer, true)
			c := newTestClient()
			defer c.CloseIdle()
			resp, err := send(t, c, addr)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if b, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("body %q, err %v: a truncated body must not end cleanly", b, err)
			}
		})
	}
	t.Run("HTTP-4/close-delimited-body-ends-at-close", func(t *testing.T) {
		addr, _ := answerOrigin(t, "HTTP/1.1 200 OK\r\n\r\nuntil close", true)
		c := newTestClient()
		defer c.CloseIdle()
		resp, err := send(t, c, addr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "until close" || !resp.Close {
			t.Fatalf("%q %v close=%v", b, err, resp.Close)
		}
	})
	t.Run("HTTP-4/chunked-trailers-dropped-connection-reused", func(t *testing.T) {
		addr, conns := answerOrigin(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\nX-T: 1\r\nX-U: 2\r\n\r\n", false)
		c := newTestClient()
		defer c.CloseIdle()
		for range 3 {
			resp, err := send(t, c, addr)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(b) != "hello!" {
				t.Fatalf("%q %v", b, err)
			}
		}
		if n := conns.Load(); n != 1 {
			t.Fatalf("%d connections for 3 requests: the trailer section left bytes behind", n)
		}
	})
	t.Run("HTTP-4/connection-close-answer-not-reused", func(t *testing.T) {
		addr, conns := answerOrigin(t, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", false)
		c := newTestClient()
		defer c.CloseIdle()
		for range 2 {
			resp, err := send(t, c, addr)
			if err != nil {
				t.Fatal(err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if n := conns.Load(); n != 2 {
			t.Fatalf("%d connections: an answer with Connection: close was reused", n)
		}
	})
	t.Run("HTTP-5/too-many-interim-answers", func(t *testing.T) {
		addr, _ := answerOrigin(t, strings.Repeat("HTTP/1.1 102 Processing\r\n\r\n", maxInterim+1)+"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false)
		c := newTestClient()
		defer c.CloseIdle()
		if _, err := send(t, c, addr); err == nil || !strings.Contains(err.Error(), "interim") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("HTTP-5/interim-heads-count-toward-the-head-limit", func(t *testing.T) {
		big := "HTTP/1.1 103 Early Hints\r\nLink: " + strings.Repeat("a", maxResponseHead/4) + "\r\n\r\n"
		addr, _ := answerOrigin(t, strings.Repeat(big, 4)+"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false)
		c := newTestClient()
		defer c.CloseIdle()
		if _, err := send(t, c, addr); err == nil || !strings.Contains(err.Error(), "too large") {
			t.Fatalf("err %v", err)
		}
	})
}
