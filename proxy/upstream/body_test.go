package upstream

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/dial"
)

// silentOrigin answers one request with the raw bytes answer, then keeps
// the connection open without sending more until the test ends.
func silentOrigin(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, answer)
		<-done
	}()
	return ln.Addr().String()
}

func newTestClient() *Client {
	return &Client{Dial: (&dial.Dialer{}).Forward, ResponseTimeout: 5 * time.Second}
}

func getRequest(addr string) *Request {
	return &Request{Method: "GET", Origin: "/", Absolute: "http://" + addr + "/", Authority: addr, Addr: addr}
}

func TestBodyCloseDuringRead(t *testing.T) {
	t.Run("HTTP-4/close-races-in-flight-read", func(t *testing.T) {
		// A streamed answer that stops mid-body: the pool closes the body
		// from another goroutine while its reader waits (end of a stream
		// to an http:// channel). Run with -race.
		addr := silentOrigin(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
		c := newTestClient()
		defer c.CloseIdle()
		res := c.Send(context.Background(), candidate.Direct, getRequest(addr), nil, time.Second, false)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		body := res.Resp.Body
		buf := make([]byte, 16)
		if n, err := body.Read(buf); err != nil || string(buf[:n]) != "hello" {
			t.Fatalf("first read %q %v", buf[:n], err)
		}
		reading := make(chan struct{})
		readDone := make(chan error, 1)
		go func() {
			close(reading)
			_, err := body.Read(make([]byte, 16))
			readDone <- err
		}()
		<-reading
		closed := make(chan error, 1)
		go func() { closed <- body.Close() }()
		select {
		case <-closed:
		case <-time.After(2 * time.Second):
			t.Fatal("Close blocked behind the in-flight Read")
		}
		select {
		case err := <-readDone:
			if err == nil {
				t.Fatal("in-flight Read returned no error after Close")
			}
		case <-time.After(2 * time.Second):
			t.Fatal("in-flight Read not ended by Close")
		}
		if n, err := body.Read(buf); n != 0 || err == nil {
			t.Fatalf("Read after Close: %d %v", n, err)
		}
	})
}

func TestBodyCloseEarly(t *testing.T) {
	t.Run("HTTP-4/close-of-a-half-read-content-length-body-from-a-stalled-origin-returns", func(t *testing.T) {
		// A caller that stops reading a Content-Length body halfway (a
		// client gone mid-answer whose request body was streamed, so no
		// client watch cancels it) closes the body while the origin sends
		// nothing more: Close must not wait for the origin's next byte.
		addr := silentOrigin(t, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello")
		c := newTestClient()
		defer c.CloseIdle()
		res := c.Send(context.Background(), candidate.Direct, getRequest(addr), nil, time.Second, false)
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
			res := c.Send(context.Background(), candidate.Direct, getRequest(addr), nil, time.Second, true)
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
