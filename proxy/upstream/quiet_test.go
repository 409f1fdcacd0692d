package upstream

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testkit"
	"github.com/dual-proxy/dual-proxy/proxy/path"
)

// loopbackPair is a connected TCP pair on 127.0.0.1: ours, wrapped as a
// pooled upConn, and the peer's end.
func loopbackPair(t *testing.T) (uc *upConn, peer net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer = <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return newUpConn(c, poolKey{"k", "a"}, time.Second), peer
}

func TestQuiet(t *testing.T) {
	t.Run("HTTP-5/idle-connection-is-quiet-and-the-peek-allocates-nothing", func(t *testing.T) {
		uc, _ := loopbackPair(t)
		if !uc.quiet() {
			t.Fatal("an idle connection with nothing queued is not quiet")
		}
		if n := testing.AllocsPerRun(100, func() { uc.quiet() }); n != 0 {
			t.Fatalf("quiet allocates %v times per check (issue 20: it runs before every reuse)", n)
		}
	})
	t.Run("HTTP-5/unsolicited-byte-is-not-quiet", func(t *testing.T) {
		uc, peer := loopbackPair(t)
		io.WriteString(peer, "H")
		testkit.WaitFor(t, 5*time.Second, "the byte seen", func() bool { return !uc.quiet() })
		if b, err := uc.br.Peek(1); err != nil || b[0] != 'H' {
			t.Fatalf("the peek consumed the byte: %q %v", b, err)
		}
	})
}

func TestPooledWriteDeadline(t *testing.T) {
	t.Run("HTTP-4/pooled-connection-works-after-the-previous-write-deadline-passed", func(t *testing.T) {
		// release leaves the request's write deadline armed on a pooled
		// connection; the next request's write must replace it.
		addr, closed := keepAliveOrigin(t)
		c := &Client{Dial: newTestClient().Dial, ResponseTimeout: 100 * time.Millisecond}
		defer c.CloseIdle()
		send := func() time.Time {
			r := getRequest(addr)
			r.ResponseTimeout = 10 * time.Second // the head wait; ResponseTimeout above is the write bound
			res := c.Send(context.Background(), path.Direct, r, nil, 5*time.Second, true)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			defer res.Resp.Body.Close()
			if b, err := io.ReadAll(res.Resp.Body); err != nil || string(b) != "ok" {
				t.Fatalf("%q %v", b, err)
			}
			return time.Now()
		}
		done := send()
		testkit.WaitFor(t, 5*time.Second, "the write deadline to pass", func() bool { return time.Since(done) > 300*time.Millisecond })
		send()
		select {
		case <-closed:
			t.Fatal("the pooled connection was not reused")
		default:
		}
	})
}

// BenchmarkQuiet is the check before every reuse of a pooled connection
// (HTTP-5): one idle loopback connection, nothing queued.
func BenchmarkQuiet(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	uc := newUpConn(c, poolKey{"k", "a"}, time.Second)
	b.ReportAllocs()
	for b.Loop() {
		if !uc.quiet() {
			b.Fatal("idle connection not quiet")
		}
	}
}

func TestHeadDeadlineLeftArmed(t *testing.T) {
	t.Run("HTTP-4/pooled-connection-reused-after-the-armed-head-deadline-passed", func(t *testing.T) {
		// A body that was all buffered with the head leaves the head's
		// read deadline armed on the pooled connection; once it passed,
		// get must clear it, or quiet's peek fails and the connection is
		// dropped.
		addr, closed := keepAliveOrigin(t)
		c := newTestClient()
		defer c.CloseIdle()
		send := func() time.Time {
			r := getRequest(addr)
			r.ResponseTimeout = 100 * time.Millisecond
			res := c.Send(context.Background(), path.Direct, r, nil, 5*time.Second, true)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			defer res.Resp.Body.Close()
			if b, err := io.ReadAll(res.Resp.Body); err != nil || string(b) != "ok" {
				t.Fatalf("%q %v", b, err)
			}
			return time.Now()
		}
		done := send()
		testkit.WaitFor(t, 5*time.Second, "the head deadline to pass", func() bool { return time.Since(done) > 300*time.Millisecond })
		send()
		select {
		case <-closed:
			t.Fatal("the pooled connection was not reused")
		default:
		}
	})
	t.Run("HTTP-4/body-arriving-after-the-head-deadline-is-read", func(t *testing.T) {
		// No timeout once the body streams: a body not buffered with the
		// head clears the head's deadline.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		served := make(chan struct{})
		go func() {
			defer close(served)
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
				return
			}
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab")
			time.Sleep(400 * time.Millisecond) // past the 100 ms head deadline
			io.WriteString(conn, "cd")
		}()
		defer func() { <-served }()
		c := newTestClient()
		defer c.CloseIdle()
		r := getRequest(ln.Addr().String())
		r.ResponseTimeout = 100 * time.Millisecond
		res := c.Send(context.Background(), path.Direct, r, nil, 5*time.Second, true)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		defer res.Resp.Body.Close()
		if b, err := io.ReadAll(res.Resp.Body); err != nil || string(b) != "abcd" {
			t.Fatalf("%q %v", b, err)
		}
	})
}
