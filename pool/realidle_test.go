package pool_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
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
	// closeNow: every connection closes after its answer, the n-th one
	// (n counted from 0) n%5 × 200 µs later, as a server whose close
	// comes a moment after its write: the FIN races the next request on a
	// kept-alive connection.
	closeNow bool
	served   atomic.Int64
	conns    atomic.Int64
	// dropped counts requests that arrived on a connection the channel
	// had decided to close and were never processed.
	dropped atomic.Int64
	// refuseClose: a request with "Connection: close" (the pool's resend
	// on a connection of its own) is read and its connection closed
	// unanswered; closeReqs counts such requests, refused or not.
	refuseClose bool
	closeReqs   atomic.Int64
	// tls, when set, serves TLS (no ALPN: HTTP/1.1); halfClose then ends
	// with TLS's close_notify.
	tls *tls.Config
	wg  sync.WaitGroup
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

// newCloseNowChannel is an idleClosingChannel whose every connection
// closes right after its answer (closeNow).
func newCloseNowChannel(t *testing.T) *idleClosingChannel {
	t.Helper()
	return startChannel(t, &idleClosingChannel{closeNow: true})
}

func startIdleClosingChannel(t *testing.T, halfClose bool) *idleClosingChannel {
	t.Helper()
	return startChannel(t, &idleClosingChannel{halfClose: halfClose})
}

func startChannel(t *testing.T, c *idleClosingChannel) *idleClosingChannel {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.ln = ln
	if c.tls != nil {
		c.ln = tls.NewListener(ln, c.tls)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			conn, err := c.ln.Accept()
			if err != nil {
				return
			}
			n := c.conns.Add(1)
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				var after time.Duration
				if c.closeNow {
					after = time.Duration(n%5) * 200 * time.Microsecond
				}
				c.serve(conn, !c.closeNow && (c.halfClose || n%2 == 0), after)
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
// next request's first bytes are there, unread; else after the pause after.
func (c *idleClosingChannel) serve(conn net.Conn, waitNext bool, after time.Duration) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	b, _ := io.ReadAll(req.Body)
	if req.Close {
		c.closeReqs.Add(1)
		if c.refuseClose {
			return
		}
	}
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
	if after > 0 {
		<-time.After(after) // the channel's own pace between its answer and its close (closeNow)
	}
	if waitNext {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := br.Peek(1); err == nil { // the next request is here (or the pool closed first)
			c.dropped.Add(1)
		}
		if c.halfClose {
			conn.(interface{ CloseWrite() error }).CloseWrite() // a FIN (TLS: close_notify); the request is read and dropped, no reset
			conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			io.Copy(io.Discard, br)
			return
		}
		conn.(*net.TCPConn).SetLinger(0) // and is dropped unprocessed: a reset
	}
}

// TestIdleClosedChannelConnection: a channel that closes kept-alive
// connections without "Connection: close" costs no call (SPEC POOL-17,
// POOL-26): a request on a reused connection that the channel had closed
// while idle, failing with a reset before any answer byte, was not
// processed and is sent once more on a connection of its own to the same
// member; the member is never cooled and the session stays where it was.
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
// answer byte. The pool sends it once more to the same member on a
// connection of its own (SPEC POOL-26): every call is answered by the
// bound member at the first attempt, the member is never cooled, each
// resend is told to the observer once, and no request is processed twice.
func TestHalfClosedChannelConnection(t *testing.T) {
	t.Run("POOL-26/fin-before-the-answer-resent-once-to-the-same-member", func(t *testing.T) {
		ch := newHalfClosingChannel(t)
		var resends atomic.Int64
		w := newRWorld(t, rconf{opts: pool.Options{Observer: pool.Observer{Resend: func(p, m string) {
			if p == "p" && m == "a" {
				resends.Add(1)
			}
		}}}}, []string{"unused"}, okChannel("unused"))
		reload(t, w, "channels:\n  a: {api: anthropic, base_url: \"http://"+ch.ln.Addr().String()+"\", api_key: sk-test-a-0123456789}\n"+
			"pools:\n  p:\n    members: [a]\n")
		const calls = 40
		for i := range calls {
			resp, body := w.do("/pool/p/v1/messages", "s1", anthropicBody(i%2 == 0))
			if resp.StatusCode != 200 || !strings.Contains(body, "hi from a") {
				t.Fatalf("call %d: %d %s", i, resp.StatusCode, body)
			}
			if m, a := resp.Header.Get("x-pool-member"), resp.Header.Get("x-pool-attempts"); m != "a" || a != "1" {
				t.Fatalf("call %d: member %q after %s attempts, want a after 1", i, m, a)
			}
		}
		if m := w.member("a"); m.State != "ready" || m.Failures != 0 || m.Successes != calls || m.BoundSessions != 1 {
			t.Fatalf("member a: %+v", m)
		}
		if n := ch.served.Load(); n != calls {
			t.Fatalf("the channel processed %d requests for %d calls", n, calls)
		}
		if d, r, c := ch.dropped.Load(), resends.Load(), ch.closeReqs.Load(); d == 0 || r != d || c != d {
			t.Fatalf("%d requests dropped by the channel, %d resends told, %d resends received: want each drop resent and told once", d, r, c)
		}
		t.Logf("%d calls, %d resent once", calls, resends.Load())
	})
	t.Run("POOL-26/https-channel-close-notify-before-the-answer-resent-once", func(t *testing.T) {
		ca := testworld.NewCA(t, "channel CA")
		ch := startChannel(t, &idleClosingChannel{halfClose: true, tls: &tls.Config{Certificates: []tls.Certificate{ca.Leaf(t, "127.0.0.1")}}})
		e, err := proxy.NewEngine(proxy.Config{Candidates: []candidate.Candidate{candidate.Direct}, LoopbackDirect: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		tr := e.PoolRoundTripper()
		tr.TLSClientConfig = &tls.Config{RootCAs: ca.Pool}
		t.Cleanup(tr.CloseIdleConnections)
		var resends atomic.Int64
		w := newRWorld(t, rconf{opts: pool.Options{Transport: tr, Observer: pool.Observer{Resend: func(string, string) { resends.Add(1) }}}},
			[]string{"unused"}, okChannel("unused"))
		reload(t, w, "channels:\n  a: {api: anthropic, base_url: \"https://"+ch.ln.Addr().String()+"\", api_key: sk-test-a-0123456789}\n"+
			"pools:\n  p:\n    members: [a]\n")
		const calls = 20
		for i := range calls {
			resp, body := w.do("/pool/p/v1/messages", "s1", anthropicBody(i%2 == 0))
			if resp.StatusCode != 200 || !strings.Contains(body, "hi from a") || resp.Header.Get("x-pool-attempts") != "1" {
				t.Fatalf("call %d: %d attempts %s %s", i, resp.StatusCode, resp.Header.Get("x-pool-attempts"), body)
			}
		}
		if n := ch.served.Load(); n != calls {
			t.Fatalf("the channel processed %d requests for %d calls", n, calls)
		}
		if d, r, c := ch.dropped.Load(), resends.Load(), ch.closeReqs.Load(); d == 0 || r != d || c != d {
			t.Fatalf("%d requests dropped by the channel, %d resends told, %d resends received", d, r, c)
		}
		if m := w.member("a"); m.Failures != 0 || m.State != "ready" {
			t.Fatalf("member a: %+v", m)
		}
	})
	t.Run("POOL-26/resend-never-sent-a-third-time", func(t *testing.T) {
		ch := startChannel(t, &idleClosingChannel{halfClose: true, refuseClose: true})
		w := newRWorld(t, rconf{}, []string{"unused"}, okChannel("unused"))
		reload(t, w, "channels:\n  a: {api: anthropic, base_url: \"http://"+ch.ln.Addr().String()+"\", api_key: sk-test-a-0123456789}\n"+
			"pools:\n  p:\n    members: [a]\n")
		if resp, body := w.do("/pool/p/v1/messages", "s1", anthropicBody(false)); resp.StatusCode != 200 {
			t.Fatalf("call 1: %d %s", resp.StatusCode, body)
		}
		// Call 2 goes on call 1's kept-alive connection, which the channel
		// closes unanswered; its resend, on a connection of its own, is
		// closed unanswered too: the call fails, with no third request.
		resp, body := w.do("/pool/p/v1/messages", "s1", anthropicBody(false))
		if resp.StatusCode != 502 || !strings.Contains(body, `"class":"network"`) {
			t.Fatalf("call 2: %d %s, want the network failure of the resend", resp.StatusCode, body)
		}
		if d, c := ch.dropped.Load(), ch.closeReqs.Load(); d != 1 || c != 1 {
			t.Fatalf("channel: %d requests dropped on the kept-alive connection, %d resends: want 1 and 1", d, c)
		}
	})
}
