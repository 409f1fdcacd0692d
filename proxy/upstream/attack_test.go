package upstream

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/path"
)

func TestBodyCloseEarly(t *testing.T) {
	t.Run("HTTP-4/close-of-a-half-read-content-length-body-from-a-stalled-origin-returns", func(t *testing.T) {
		// A caller that stops reading a Content-Length body halfway (a
		// client gone mid-answer whose request body was streamed, so no
		// client watch cancels it) closes the body while the origin sends
		// nothing more: Close must not wait for the origin's next byte.
		addr := silentOrigin(t, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello")
		c := newTestClient()
		defer c.CloseIdle()
		res := c.Send(context.Background(), path.Direct, getRequest(addr), nil, time.Second, false)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		buf := make([]byte, 5)
		if _, err := io.ReadFull(res.Resp.Body, buf); err != nil {
			t.Fatal(err)
		}
		closed := make(chan struct{})
		go func() { res.Resp.Body.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("Close of a half-read body waits for the stalled origin")
		}
	})
	t.Run("HTTP-5/fully-read-content-length-body-is-pooled", func(t *testing.T) {
		addr, closed := keepAliveOrigin(t)
		c := newTestClient()
		defer c.CloseIdle()
		for range 2 {
			res := c.Send(context.Background(), path.Direct, getRequest(addr), nil, time.Second, true)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			buf := make([]byte, 2)
			if _, err := io.ReadFull(res.Resp.Body, buf); err != nil || string(buf) != "ok" {
				t.Fatalf("%q %v", buf, err)
			}
			res.Resp.Body.Close() // exactly Content-Length read, EOF not yet seen
		}
		select {
		case <-closed:
			t.Fatal("a fully read body's connection was not reused")
		default:
		}
	})
}
