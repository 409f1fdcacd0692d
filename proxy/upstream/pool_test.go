package upstream

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// keepAliveOrigin answers every request on a connection with "ok" and
// reports on closed when the proxy side closed a connection.
func keepAliveOrigin(t *testing.T) (addr string, closed <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 16)
	addr = testkit.ServeConns(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(br); err != nil {
				ch <- struct{}{}
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	return addr, ch
}

func TestIdleExpiry(t *testing.T) {
	t.Run("HTTP-4/idle-pooled-connection-closed-after-idle-timeout-without-traffic", func(t *testing.T) {
		addr, closed := keepAliveOrigin(t)
		c := newTestClient()
		c.IdleTimeout = 200 * time.Millisecond
		defer c.CloseIdle()
		res := c.Send(context.Background(), candidate.Direct, getRequest(addr), nil, time.Second, true)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if b, err := io.ReadAll(res.Resp.Body); err != nil || string(b) != "ok" {
			t.Fatalf("%q %v", b, err)
		}
		res.Resp.Body.Close()
		start := time.Now()
		select {
		case <-closed:
			if d := time.Since(start); d < 150*time.Millisecond {
				t.Fatalf("closed after %v, before the idle timeout", d)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("idle pooled connection still open 3 s after a 200 ms idle timeout")
		}
	})
	t.Run("HTTP-4/pooled-connection-reused-within-idle-timeout", func(t *testing.T) {
		addr, closed := keepAliveOrigin(t)
		c := newTestClient()
		defer c.CloseIdle()
		for range 3 {
			res := c.Send(context.Background(), candidate.Direct, getRequest(addr), nil, time.Second, true)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			io.ReadAll(res.Resp.Body)
			res.Resp.Body.Close()
		}
		select {
		case <-closed:
			t.Fatal("a pooled connection was closed between requests")
		default:
		}
	})
}

func TestCancelledExchangeNotPooled(t *testing.T) {
	t.Run("HTTP-4/context-ended-before-body-close-connection-closed-not-pooled", func(t *testing.T) {
		// The context ends after the head arrived and before the body
		// (already buffered) is read: the exchange's callback sets a past
		// deadline on the connection in its own goroutine, so the
		// connection must be closed, never pooled (before, the body's end
		// could pool it when that goroutine had not yet run).
		addr, closed := keepAliveOrigin(t)
		c := newTestClient()
		defer c.CloseIdle()
		ctx, cancel := context.WithCancel(context.Background())
		res := c.Send(ctx, candidate.Direct, getRequest(addr), nil, time.Second, true)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		cancel()
		io.ReadAll(res.Resp.Body)
		res.Resp.Body.Close()
		select {
		case <-closed:
		case <-time.After(3 * time.Second):
			t.Fatal("the connection of an exchange whose context ended is still open 3 s after Close (pooled)")
		}
	})
}

// countingInterrupter records Arm and Disarm; Disarm answers live.
type countingInterrupter struct {
	arms, disarms int
	live          bool
}

func (ci *countingInterrupter) Arm(func()) { ci.arms++ }
func (ci *countingInterrupter) Disarm() bool {
	ci.disarms++
	return ci.live
}

func TestRequestInterrupter(t *testing.T) {
	for _, live := range []bool{true, false} {
		name := "HTTP-4/interrupter-disarmed-live-connection-pooled"
		if !live {
			name = "HTTP-4/interrupter-that-ran-connection-closed-not-pooled"
		}
		t.Run(name, func(t *testing.T) {
			// Request.Interrupt replaces the AfterFunc per request (issue
			// 20): armed once per exchange, disarmed at the body's release,
			// and its answer decides the pooling as stop's did.
			addr, closed := keepAliveOrigin(t)
			c := newTestClient()
			defer c.CloseIdle()
			ci := &countingInterrupter{live: live}
			r := getRequest(addr)
			r.Interrupt = ci
			res := c.Send(context.Background(), candidate.Direct, r, nil, time.Second, true)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			io.ReadAll(res.Resp.Body)
			res.Resp.Body.Close()
			if ci.arms != 1 || ci.disarms != 1 {
				t.Fatalf("Arm %d, Disarm %d times, want once each", ci.arms, ci.disarms)
			}
			select {
			case <-closed:
				if live {
					t.Fatal("the connection of a live exchange was closed, not pooled")
				}
			case <-time.After(time.Second):
				if !live {
					t.Fatal("the connection of an interrupted exchange is still open 1 s after Close (pooled)")
				}
			}
		})
	}
}

// BenchmarkPoolGetPut is the idle pool's work per plain request on a
// pooled connection: get, then put back. Nothing is dialled:
// the connections are net.Pipe ends that are never read.
func BenchmarkPoolGetPut(b *testing.B) {
	p := &connPool{ttl: time.Minute}
	defer p.closeAll()
	key := poolKey{"direct", "127.0.0.1:8080"}
	for range 4 {
		c, s := net.Pipe()
		b.Cleanup(func() { s.Close() })
		p.put(newUpConn(c, key, time.Minute))
	}
	b.ReportAllocs()
	for b.Loop() {
		uc := p.get(key)
		if uc == nil {
			b.Fatal("no idle connection")
		}
		p.put(uc)
	}
}

func TestRequestCloseNotPooled(t *testing.T) {
	t.Run("HC-1/close-request-says-so-and-its-connection-is-closed-after-the-body", func(t *testing.T) {
		heads := make(chan http.Header, 1)
		closed := make(chan struct{}, 1)
		addr := testkit.ServeConns(t, func(c net.Conn) {
			br := bufio.NewReader(c)
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			heads <- req.Header
			// The answer keeps the connection alive: the client closes it.
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			br.ReadByte()
			closed <- struct{}{}
		})
		c := newTestClient()
		defer c.CloseIdle()
		r := getRequest(addr)
		r.Close = true
		res := c.Send(context.Background(), candidate.Direct, r, nil, time.Second, true)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if h := <-heads; h.Get("Connection") != "close" {
			t.Fatalf("Connection %q, want close", h.Get("Connection"))
		}
		if !res.Resp.Close {
			t.Error("Response.Close false for a request that closes")
		}
		io.ReadAll(res.Resp.Body)
		res.Resp.Body.Close()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("the connection of a Close request is still open 5 s after its body was closed (pooled)")
		}
	})
}
