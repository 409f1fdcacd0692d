package upstream

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// scriptOrigin serves connection i (from 0) with script[i] (the last one
// for any later connection) and closes it when that returns; each step
// gets the connection and its reader.
func scriptOrigin(t *testing.T, script ...func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	var conns atomic.Int32
	return testkit.ServeConns(t, func(c net.Conn) {
		defer c.Close()
		i := int(conns.Add(1)) - 1
		script[min(i, len(script)-1)](c, bufio.NewReader(c))
	})
}

// readHead reads one request head and its body (Content-Length only),
// counting it.
func readHead(br *bufio.Reader, heads *atomic.Int32) bool {
	req, err := http.ReadRequest(br)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, req.Body)
	heads.Add(1)
	return true
}

func postRequest(addr string) *Request {
	r := getRequest(addr)
	r.Method, r.Length, r.ReuseUnreplayable = "POST", 2, true
	return r
}

// sendRead sends r with body (may be empty) and returns the status and body.
func sendRead(t *testing.T, c *Client, r *Request, body string, reuse bool) (int, string, Result) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
		r.Reopen = func() io.Reader { return strings.NewReader(body) }
	}
	res := c.Send(context.Background(), candidate.Direct, r, rd, 5*time.Second, reuse)
	if res.Err != nil {
		return 0, "", res
	}
	defer res.Resp.Body.Close()
	b, err := io.ReadAll(res.Resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.Resp.StatusCode, string(b), res
}

func TestIdleCheck(t *testing.T) {
	ok := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	serveOK := func(heads *atomic.Int32) func(c net.Conn, br *bufio.Reader) {
		return func(c net.Conn, br *bufio.Reader) {
			for readHead(br, heads) {
				io.WriteString(c, ok)
			}
		}
	}
	t.Run("HTTP-5/bytes-sent-while-idle-never-answer-the-next-request", func(t *testing.T) {
		var heads atomic.Int32
		pooled, sent := make(chan struct{}), make(chan struct{})
		addr := scriptOrigin(t, func(c net.Conn, br *bufio.Reader) {
			readHead(br, &heads)
			io.WriteString(c, ok)
			<-pooled // unsolicited, while the connection sits in the pool
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil")
			close(sent)
			io.Copy(io.Discard, br)
		}, serveOK(&heads))
		c := newTestClient()
		defer c.CloseIdle()
		if st, b, res := sendRead(t, c, getRequest(addr), "", true); st != 200 || b != "ok" {
			t.Fatalf("first: %d %q %v", st, b, res.Err)
		}
		close(pooled)
		<-sent
		for _, r := range []*Request{getRequest(addr), postRequest(addr)} {
			body := ""
			if r.Method == "POST" {
				body = "hi"
			}
			if st, b, res := sendRead(t, c, r, body, r.Method == "GET"); st != 200 || b != "ok" {
				t.Fatalf("%s after unsolicited bytes: %d %q %v", r.Method, st, b, res.Err)
			}
		}
	})
	t.Run("HTTP-3/POST-on-a-pooled-connection-the-origin-closed-goes-on-a-fresh-one-once", func(t *testing.T) {
		// The origin closes its idle connection (FIN): the check before
		// the write sees it, so the POST (POOL-17: reusing, not
		// replayable) is written once, on a fresh connection: neither
		// lost nor replayed.
		var heads atomic.Int32
		closed := make(chan struct{})
		addr := scriptOrigin(t, func(c net.Conn, br *bufio.Reader) {
			readHead(br, &heads)
			io.WriteString(c, ok)
			c.Close()
			close(closed)
		}, serveOK(&heads))
		c := newTestClient()
		defer c.CloseIdle()
		if st, _, res := sendRead(t, c, getRequest(addr), "", true); st != 200 {
			t.Fatalf("first: %d %v", st, res.Err)
		}
		<-closed // on loopback the FIN is in our socket once Close returned
		st, b, res := sendRead(t, c, postRequest(addr), "hi", false)
		if st != 200 || b != "ok" {
			t.Fatalf("POST: %d %q %v", st, b, res.Err)
		}
		if n := heads.Load(); n != 2 {
			t.Fatalf("origin read %d requests, want 2 (the GET, the POST once)", n)
		}
	})
	t.Run("HTTP-3/POST-whose-pooled-connection-fails-after-the-write-is-not-replayed", func(t *testing.T) {
		// The origin reads the POST on the reused connection and closes
		// without an answer: the POST may have been acted on, so it is
		// not sent again (Connected true, the caller decides).
		var heads atomic.Int32
		addr := scriptOrigin(t, func(c net.Conn, br *bufio.Reader) {
			readHead(br, &heads)
			io.WriteString(c, ok)
			readHead(br, &heads) // the POST, then close without answering
		}, serveOK(&heads))
		c := newTestClient()
		defer c.CloseIdle()
		if st, _, res := sendRead(t, c, getRequest(addr), "", true); st != 200 {
			t.Fatalf("first: %d %v", st, res.Err)
		}
		_, _, res := sendRead(t, c, postRequest(addr), "hi", false)
		if res.Err == nil || !res.Connected {
			t.Fatalf("POST on a connection that failed after the write: err %v connected %v, want a failure after connecting", res.Err, res.Connected)
		}
		if n := heads.Load(); n != 2 {
			t.Fatalf("origin read %d requests, want 2 (the POST exactly once)", n)
		}
	})
	t.Run("HTTP-3/GET-whose-pooled-connection-fails-before-an-answer-byte-is-retried-once", func(t *testing.T) {
		var heads atomic.Int32
		drop := func(c net.Conn, br *bufio.Reader) { readHead(br, &heads) } // reads, closes, never answers
		addr := scriptOrigin(t, func(c net.Conn, br *bufio.Reader) {
			readHead(br, &heads)
			io.WriteString(c, ok)
			readHead(br, &heads) // the reused request: closed unanswered
		}, serveOK(&heads))
		c := newTestClient()
		defer c.CloseIdle()
		if st, _, res := sendRead(t, c, getRequest(addr), "", true); st != 200 {
			t.Fatalf("first: %d %v", st, res.Err)
		}
		if st, b, res := sendRead(t, c, getRequest(addr), "", true); st != 200 || b != "ok" {
			t.Fatalf("GET after the reused connection failed: %d %q %v", st, b, res.Err)
		}
		if n := heads.Load(); n != 3 {
			t.Fatalf("origin read %d requests, want 3 (first, the failed reuse, the retry)", n)
		}
		// Once: when the fresh connection fails too, that failure stands.
		heads.Store(0)
		addr = scriptOrigin(t, func(c net.Conn, br *bufio.Reader) {
			readHead(br, &heads)
			io.WriteString(c, ok)
			readHead(br, &heads)
		}, drop)
		if st, _, res := sendRead(t, c, getRequest(addr), "", true); st != 200 {
			t.Fatalf("first: %d %v", st, res.Err)
		}
		if _, _, res := sendRead(t, c, getRequest(addr), "", true); res.Err == nil {
			t.Fatal("a GET whose retry failed too succeeded")
		}
		if n := heads.Load(); n != 3 {
			t.Fatalf("origin read %d requests, want 3 (first, the failed reuse, one retry)", n)
		}
	})
}

func TestPooledWriteDeadline(t *testing.T) {
	t.Run("HTTP-4/pooled-connection-works-after-the-previous-write-deadline-passed", func(t *testing.T) {
		// release leaves the request's write deadline armed on a pooled
		// connection; the next request's write must replace it.
		c := &Client{Dial: newTestClient().Dial, ResponseTimeout: 100 * time.Millisecond}
		// 10 s: the head wait; the Client's ResponseTimeout is the write bound.
		reusedAfterDeadline(t, c, 10*time.Second, "the write deadline to pass")
	})
}

func TestHeadDeadlineLeftArmed(t *testing.T) {
	t.Run("HTTP-4/pooled-connection-reused-after-the-armed-head-deadline-passed", func(t *testing.T) {
		// A body that was all buffered with the head leaves the head's
		// read deadline armed on the pooled connection; once it passed,
		// the next request must clear it, or the idle check before it
		// fails and the connection is dropped.
		reusedAfterDeadline(t, newTestClient(), 100*time.Millisecond, "the head deadline to pass")
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
		res := c.Send(context.Background(), candidate.Direct, r, nil, 5*time.Second, true)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		defer res.Resp.Body.Close()
		if b, err := io.ReadAll(res.Resp.Body); err != nil || string(b) != "abcd" {
			t.Fatalf("%q %v", b, err)
		}
	})
}

// reusedAfterDeadline sends two GETs through c to a keep-alive origin,
// the second once a deadline armed by the first (head wait headWait) has
// passed, and fails unless both are answered and the second reused the
// pooled connection.
func reusedAfterDeadline(t *testing.T, c *Client, headWait time.Duration, what string) {
	t.Helper()
	addr, closed := keepAliveOrigin(t)
	defer c.CloseIdle()
	send := func() time.Time {
		r := getRequest(addr)
		r.ResponseTimeout = headWait
		res := c.Send(context.Background(), candidate.Direct, r, nil, 5*time.Second, true)
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
	testkit.WaitFor(t, 5*time.Second, what, func() bool { return time.Since(done) > 300*time.Millisecond })
	send()
	select {
	case <-closed:
		t.Fatal("the pooled connection was not reused")
	default:
	}
}

func TestWriteBound(t *testing.T) {
	t.Run("HTTP-4/origin-that-stops-reading-the-request-fails-the-write-within-the-response-timeout", func(t *testing.T) {
		// Every upstream write must make progress within the response
		// timeout: the first write shares the head's deadline (send), the
		// later ones set their own (deadlineWriter).
		stop := make(chan struct{})
		addr := testkit.ServeConns(t, func(c net.Conn) { <-stop }) // reads nothing
		defer close(stop)
		c := &Client{Dial: newTestClient().Dial, ResponseTimeout: 300 * time.Millisecond}
		defer c.CloseIdle()
		r := getRequest(addr)
		r.Method, r.Length = "PUT", 16<<20 // far more than the socket buffers hold
		start := time.Now()
		res := c.Send(context.Background(), candidate.Direct, r, io.LimitReader(zeros{}, r.Length), 5*time.Second, false)
		if res.Err == nil {
			res.Resp.Body.Close()
			t.Fatal("a 16 MiB upload to an origin that reads nothing succeeded")
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("the stalled upload failed after %v, want about the 300 ms write bound", d)
		}
	})
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
