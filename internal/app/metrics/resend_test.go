package metrics

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// finChannel is an Anthropic channel on a raw socket that answers one
// request per connection without "Connection: close" and, once the next
// request's first bytes are there, closes the connection with a FIN, that
// request unread (dropped counts them): every kept-alive connection the
// pool reuses closes before one byte of the answer.
type finChannel struct {
	ln              net.Listener
	served, dropped atomic.Int64
	wg              sync.WaitGroup
}

func newFinChannel(t *testing.T) *finChannel {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &finChannel{ln: ln}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				c.serve(conn)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		c.wg.Wait()
	})
	return c
}

func (c *finChannel) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	io.Copy(io.Discard, req.Body)
	c.served.Add(1)
	body := `{"id":"msg_a","type":"message","role":"assistant","content":[{"type":"text","text":"hi from a"}],"usage":{"input_tokens":5,"output_tokens":3}}`
	if _, err := io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
		return
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.Peek(1); err != nil {
		return // the pool closed first
	}
	c.dropped.Add(1)
	conn.(*net.TCPConn).CloseWrite()
	conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	io.Copy(io.Discard, br) // read and dropped, no reset
}

// TestPoolResendMetrics: 200 sequential calls of one session to a
// one-member pool whose channel closes every kept-alive connection before
// answering the next request on it (and says nothing on the answer
// before): every call is answered by the member at the first attempt, the
// session never moves, and each resend is counted once in
// dual_proxy_pool_resends_total.
func TestPoolResendMetrics(t *testing.T) {
	t.Run("POOL-26/200-calls-each-resend-counted-once", func(t *testing.T) {
		ch := newFinChannel(t)
		cfg, err := config.ParseConfig([]byte(fmt.Sprintf("channels:\n  a: {api: anthropic, base_url: %q, api_key: sk-a}\npools:\n  p: {members: [a]}\n",
			"http://"+ch.ln.Addr().String())), nil)
		if err != nil {
			t.Fatal(err)
		}
		w := newWorld(t, []candidate.Candidate{candidate.Direct})
		up := w.srv.Engine().PoolRoundTripper() // as internal/app/cli wires the pool
		defer up.CloseIdleConnections()
		p := pool.New(cfg, pool.Options{Transport: up, Observer: w.m.PoolObserver()})
		w.m.AttachPool(func() *pool.Pool { return p })
		w.mux.Handle("/pool/", p)
		tr := &http.Transport{Proxy: nil}
		defer tr.CloseIdleConnections()
		const calls = 200
		for i := range calls {
			req, _ := http.NewRequest(http.MethodPost, "http://"+w.addr+"/pool/p/v1/messages",
				strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Session-Id", "s1")
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "a" || resp.Header.Get("X-Pool-Attempts") != "1" {
				t.Fatalf("call %d: %s member %q attempts %q %s", i, resp.Status, resp.Header.Get("X-Pool-Member"), resp.Header.Get("X-Pool-Attempts"), b)
			}
		}
		f := w.scrape(t)
		dropped := float64(ch.dropped.Load())
		if dropped == 0 {
			t.Fatal("the channel never closed a reused connection unanswered")
		}
		for _, c := range []struct {
			name   string
			labels []string
			want   float64
		}{
			{"dual_proxy_pool_calls_total", []string{"pool", "p", "member", "a", "class", "ok"}, calls},
			{"dual_proxy_pool_failovers_total", []string{"pool", "p"}, 0},
			{"dual_proxy_pool_resends_total", []string{"pool", "p", "member", "a"}, dropped},
			{"dual_proxy_pool_member_cooling", []string{"pool", "p", "member", "a"}, 0},
			{"dual_proxy_pool_bound_sessions", []string{"pool", "p", "member", "a"}, 1},
		} {
			if v := value(f, c.name, c.labels...); v != c.want {
				t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
			}
		}
		if n := ch.served.Load(); n != calls {
			t.Errorf("the channel processed %d requests for %d calls", n, calls)
		}
		t.Logf("%d calls, %v resent once", calls, dropped)
	})
}
