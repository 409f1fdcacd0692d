package pool_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// idleClosingChannel is a channel on a raw socket that closes every
// connection after one answer without saying so (no "Connection: close"),
// as servers with short idle timeouts do. Odd connections close right after
// the answer (a FIN the pool may not have seen when it reuses the
// connection); even ones close once the next request has arrived, without
// processing it, by a reset. served counts the
// requests read and answered.
type idleClosingChannel struct {
	ln net.Listener
	// halfClose: every connection, once the next request's first bytes
	// are there, gets a FIN and its further bytes are read and dropped for
	// 100 ms (no reset): the pool sees a clean EOF before any answer byte.
	halfClose bool
	served    atomic.Int64
	conns     atomic.Int64
	wg        sync.WaitGroup
}

func newIdleClosingChannel(t *testing.T) *idleClosingChannel {
	t.Helper()
	return startIdleClosingChannel(t, false)
}

// newHalfClosingChannel is an idleClosingChannel whose every connection
// ends with a FIN once the next request has arrived (halfClose).
func newHalfClosingChannel(t *testing.T) *idleClosingChannel {
	t.Helper()
	return startIdleClosingChannel(t, true)
}

func startIdleClosingChannel(t *testing.T, halfClose bool) *idleClosingChannel {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &idleClosingChannel{ln: ln, halfClose: halfClose}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			n := c.conns.Add(1)
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				c.serve(conn, c.halfClose || n%2 == 0)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		c.wg.Wait()
	})
	return c
}

// serve answers one request on conn and closes it; waitNext: only once the
// next request's first bytes are there, unread.
func (c *idleClosingChannel) serve(conn net.Conn, waitNext bool) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	b, _ := io.ReadAll(req.Body)
	c.served.Add(1)
	var body, ctype string
	if strings.Contains(string(b), `"stream":true`) {
		ctype = "text/event-stream"
		for _, e := range []string{
			`message_start`, `{"type":"message_start","message":{"id":"msg_a","type":"message","role":"assistant","content":[],"usage":{"input_tokens":5,"output_tokens":0}}}`,
			`content_block_start`, `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`content_block_delta`, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi from a"}}`,
			`content_block_stop`, `{"type":"content_block_stop","index":0}`,
			`message_delta`, `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`,
			`message_stop`, `{"type":"message_stop"}`,
		} {
			if strings.HasPrefix(e, "{") {
				body += "data: " + e + "\n\n"
			} else {
				body += "event: " + e + "\n"
			}
		}
	} else {
		ctype = "application/json"
		body = `{"id":"msg_a","type":"message","role":"assistant","content":[{"type":"text","text":"hi from a"}],"usage":{"input_tokens":5,"output_tokens":3}}`
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: "+ctype+"\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
		return
	}
	if waitNext {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		br.Peek(1) // the next request is here (or the pool closed first)
		if c.halfClose {
			conn.(*net.TCPConn).CloseWrite() // a FIN; the request is read and dropped, no reset
			conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			io.Copy(io.Discard, br)
			return
		}
		conn.(*net.TCPConn).SetLinger(0) // and is dropped unprocessed: a reset
	}
}

// TestIdleClosedChannelConnection: a channel that closes kept-alive
// connections without "Connection: close" costs no call (SPEC POOL-17): a
// request on a reused connection that the channel had closed while idle,
// failing with a reset before any answer byte, was not processed and is
// sent once more on a fresh connection; the member is never cooled and the
// session stays where it was.
func TestIdleClosedChannelConnection(t *testing.T) {
	t.Run("POOL-17/idle-closed-connections-cost-no-call", func(t *testing.T) {
		ch := newIdleClosingChannel(t)
		w := newRWorld(t, rconf{}, []string{"unused"}, okChannel("unused"))
		reload(t, w, "channels:\n  a: {api: anthropic, base_url: \"http://"+ch.ln.Addr().String()+"\", api_key: sk-test-a-0123456789}\n"+
			"pools:\n  p:\n    members: [a]\n")
		const calls = 200
		for i := range calls {
			resp, body := w.do("/pool/p/v1/messages", "s1", anthropicBody(i%2 == 0))
			if resp.StatusCode != 200 || !strings.Contains(body, "hi from a") {
				t.Fatalf("call %d: %d %s", i, resp.StatusCode, body)
			}
			if m, a := resp.Header.Get("x-pool-member"), resp.Header.Get("x-pool-attempts"); m != "a" || a != "1" {
				t.Fatalf("call %d: member %q after %s attempts, want a after 1", i, m, a)
			}
		}
		if n := ch.served.Load(); n != calls {
			t.Fatalf("the channel processed %d requests for %d calls", n, calls)
		}
		m := w.member("a")
		if m.State != "ready" || m.Failures != 0 || m.Successes != calls || m.BoundSessions != 1 {
			t.Fatalf("member a: %+v", m)
		}
		t.Logf("%d calls, %d connections", calls, ch.conns.Load())
	})
}

// TestHalfClosedChannelConnection: a channel that answers on a kept-alive
// connection without "Connection: close" and then closes it with a FIN as
// the next request comes fails that request with a clean EOF before any
// answer byte. It is not sent again (a channel that read the request and
// died closes the same way, and a call is never sent twice, SPEC POOL-17),
// but it is not the member's ill health either: the member is never cooled
// and counts no failure, and the next call is served by it.
func TestHalfClosedChannelConnection(t *testing.T) {
	t.Run("POOL-17/clean-close-unanswered-cools-no-member", func(t *testing.T) {
		ch := newHalfClosingChannel(t)
		w := newRWorld(t, rconf{}, []string{"unused"}, okChannel("unused"))
		reload(t, w, "channels:\n  a: {api: anthropic, base_url: \"http://"+ch.ln.Addr().String()+"\", api_key: sk-test-a-0123456789}\n"+
			"pools:\n  p:\n    members: [a]\n")
		const calls = 40
		ok, failed := 0, 0
		for i := range calls {
			resp, body := w.do("/pool/p/v1/messages", "s1", anthropicBody(false))
			switch {
			case resp.StatusCode == 200 && strings.Contains(body, "hi from a"):
				ok++
			case resp.StatusCode == 502 && strings.Contains(body, `"class":"network"`):
				failed++
			default:
				t.Fatalf("call %d: %d %s", i, resp.StatusCode, body)
			}
			if m := w.member("a"); m.State != "ready" || m.Failures != 0 {
				t.Fatalf("after call %d (%d served, %d failed): member a %+v, want ready with no failure counted", i, ok, failed, m)
			}
		}
		if failed == 0 || ok == 0 {
			t.Fatalf("%d served, %d failed: the channel's FIN never met a reused connection", ok, failed)
		}
		if n := ch.served.Load(); n != int64(ok) {
			t.Fatalf("the channel processed %d requests for %d served calls: a failed one was sent again", n, ok)
		}
		t.Logf("%d calls: %d served, %d closed unanswered and not resent", calls, ok, failed)
	})
}
