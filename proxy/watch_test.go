package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// countingConn counts Read calls on the client side of a connection.
type countingConn struct {
	net.Conn
	reads atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(p)
}

func TestWatchClient(t *testing.T) {
	pair := func(t *testing.T) (ours *countingConn, peer net.Conn) {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return &countingConn{Conn: a}, b
	}
	sweeper := func(t *testing.T, delay time.Duration) *watchSweeper {
		done := make(chan struct{})
		t.Cleanup(func() { close(done) })
		return &watchSweeper{done: done, delay: delay}
	}
	t.Run("HTTP-4/fast-answer-never-reads-the-client", func(t *testing.T) {
		// A request answered within clientWatchDelay costs no
		// watch goroutine and no read of the client connection.
		c, _ := pair(t)
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		ws := sweeper(t, time.Hour) // "fast": stopped long before the delay, however busy the machine
		stop := ws.watch(c, bufio.NewReader(c), cancel).stop
		stop()
		if n := c.reads.Load(); n != 0 {
			t.Fatalf("%d reads of the client connection before the watch delay", n)
		}
		if context.Cause(ctx) != nil {
			t.Fatalf("cancelled: %v", context.Cause(ctx))
		}
	})
	t.Run("HTTP-4/client-gone-after-the-delay-cancels", func(t *testing.T) {
		c, peer := pair(t)
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		ws := sweeper(t, clientWatchDelay)
		stop := ws.watch(c, bufio.NewReader(c), cancel).stop
		defer stop()
		peer.Close()
		select {
		case <-ctx.Done():
			if context.Cause(ctx) != errClientGone {
				t.Fatalf("cause %v", context.Cause(ctx))
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a client that left was not noticed")
		}
	})
	t.Run("HTTP-4/stop-after-the-delay-leaves-pipelined-bytes", func(t *testing.T) {
		c, peer := pair(t)
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		br := bufio.NewReader(c)
		ws := sweeper(t, clientWatchDelay)
		stop := ws.watch(c, br, cancel).stop
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			peer.Write([]byte("G")) // the next request's first byte: net.Pipe returns once the watch read it
		}()
		select {
		case <-wrote:
		case <-time.After(5 * time.Second):
			t.Fatal("the watch never read the client")
		}
		stop()
		if b, err := br.Peek(1); err != nil || b[0] != 'G' || context.Cause(ctx) != nil {
			t.Fatalf("after stop: %q %v, cause %v", b, err, context.Cause(ctx))
		}
	})
	t.Run("HTTP-4/watch-clears-the-idle-deadline-forward-left-armed", func(t *testing.T) {
		// forward leaves the idle deadline armed after a whole head
		// (connCtx.armIdle): a watch that starts clears it, so a
		// client leaving a request that outlasts it is still noticed.
		c, peer := pair(t)
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		idle := time.Now().Add(50 * time.Millisecond) // the armed idle deadline, short
		c.SetReadDeadline(idle)
		ws := sweeper(t, time.Millisecond)
		w := ws.watchInto(&clientWatch{}, c, bufio.NewReader(c), cancel, true)
		defer w.stop()
		testkit.WaitFor(t, 5*time.Second, "the watch's read", func() bool { return c.reads.Load() > 0 })
		<-time.After(time.Until(idle) + 50*time.Millisecond) // the client leaves after that deadline
		peer.Close()
		select {
		case <-ctx.Done():
			if context.Cause(ctx) != errClientGone {
				t.Fatalf("cause %v", context.Cause(ctx))
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a client that left after the idle deadline was not noticed")
		}
	})
}

// deadlineConn records the read deadlines set on it.
type deadlineConn struct {
	net.Conn
	set []time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.set = append(c.set, t)
	return nil
}

// TestArmIdle: the wait for the next head re-arms the idle deadline only
// when the armed one is older than idleSlack, and clearIdle
// clears exactly an armed one.
func TestArmIdle(t *testing.T) {
	t.Run("HTTP-4/idle-deadline-armed-once-per-slack", func(t *testing.T) {
		c := &deadlineConn{}
		var cc connCtx
		epoch := time.Now()
		cc.armIdle(c, epoch)
		cc.armIdle(c, epoch) // within idleSlack: kept
		if len(c.set) != 1 || time.Until(c.set[0]) < idleTimeout-idleSlack || time.Until(c.set[0]) > idleTimeout {
			t.Fatalf("deadlines %v, want one about %v from now", c.set, idleTimeout)
		}
		cc.idleSince -= idleSlack // as if armed idleSlack ago
		cc.armIdle(c, epoch)
		if len(c.set) != 2 || time.Until(c.set[1]) < idleTimeout-idleSlack {
			t.Fatalf("deadlines %v: a stale one was not re-armed", c.set)
		}
		cc.clearIdle(c)
		cc.clearIdle(c) // nothing armed any more
		if len(c.set) != 3 || !c.set[2].IsZero() {
			t.Fatalf("deadlines %v, want one clear", c.set)
		}
		cc.armIdle(c, epoch) // after a clear: armed again at once
		if len(c.set) != 4 || c.set[3].IsZero() {
			t.Fatalf("deadlines %v: not re-armed after the clear", c.set)
		}
	})
}

func TestTargetPort(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want int
	}{
		{"http://127.0.0.1:7898/x", 7898},
		{"http://localhost:80", 80},
		{"http://h:8080?q=1", 8080},
		{"http://[::1]:7898/", 7898},
		{"http://[::1]/", 0},
		{"http://example.com/a:b", 0},
		{"http://example.com", 0},
		{"http://h:/x", 0},
		{"http://h:x/", 0},
		{"/origin-form", 0},
	} {
		t.Run("HTTP-1/"+tc.raw, func(t *testing.T) {
			if got := targetPort(tc.raw); got != tc.want {
				t.Fatalf("targetPort(%q) = %d, want %d", tc.raw, got, tc.want)
			}
		})
	}
}

func TestClientGoneLaterRequest(t *testing.T) {
	t.Run("HTTP-4/client-gone-on-a-later-keep-alive-request-cancels-it", func(t *testing.T) {
		// The requests of one connection share a context (connCtx): the
		// first one's end must not cancel the second, and the second's
		// client leaving must cancel it.
		cancelled := make(chan struct{})
		var n atomic.Int64
		origin := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				io.WriteString(w, "first")
				return
			}
			select {
			case <-r.Context().Done():
				close(cancelled)
			case <-time.After(10 * time.Second):
			}
		}))
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		req := "GET " + origin.URL + "/ HTTP/1.1\r\nHost: " + origin.Addr + "\r\n\r\n"
		io.WriteString(c, req)
		if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || body != "first" {
			t.Fatalf("first: %d %q", resp.StatusCode, body)
		}
		io.WriteString(c, req)
		testkit.WaitFor(t, 5*time.Second, "origin got the second request", func() bool { return n.Load() == 2 })
		c.Close()
		select {
		case <-cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("the second request was not cancelled after the client left")
		}
	})
}

func TestClientGoneDuringShutdown(t *testing.T) {
	t.Run("HTTP-4/client-gone-during-the-shutdown-grace-cancels-its-request", func(t *testing.T) {
		// LIS-3: in-flight requests get the grace period; one whose client
		// leaves during it (its watch not yet started by the sweeper,
		// which Shutdown ends) must still be cancelled, and Shutdown must
		// return when it ends instead of waiting out the grace.
		cancelled := make(chan struct{})
		got := make(chan struct{})
		origin := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(got)
			select {
			case <-r.Context().Done():
				close(cancelled)
			case <-time.After(20 * time.Second):
			}
		}))
		srv, err := New(Config{LoopbackDirect: true})
		if err != nil {
			t.Fatal(err)
		}
		srv.watches.delay = time.Hour // the request is still pending when Shutdown starts
		addr := testkit.Serve(t, srv)
		c := proxytest.Dial(t, addr)
		io.WriteString(c, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: "+origin.Addr+"\r\n\r\n")
		<-got
		shut := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			shut <- srv.Shutdown(ctx)
		}()
		testkit.WaitFor(t, 5*time.Second, "shutdown begun", srv.isClosing)
		c.Close()
		select {
		case <-cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("a client leaving during the shutdown grace did not cancel its request")
		}
		select {
		case err := <-shut:
			if err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Shutdown waits although the last request ended")
		}
	})
}

func TestPipelinedSlowRequests(t *testing.T) {
	t.Run("HTTP-4/pipelined-requests-behind-a-watched-slow-one-are-all-answered-in-order", func(t *testing.T) {
		// The first request outlives the watch delay, so its watch runs
		// and reads the pipelined heads into the buffer; they must stay
		// there for the request loop (no byte lost, none read twice).
		origin := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				time.Sleep(10 * clientWatchDelay) // the origin's own pace, not synchronisation
			}
			io.WriteString(w, "answer"+r.URL.Path)
		}))
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		var reqs string
		paths := []string{"/slow", "/a", "/slow", "/b"}
		for _, p := range paths {
			reqs += "GET " + origin.URL + p + " HTTP/1.1\r\nHost: " + origin.Addr + "\r\n\r\n"
		}
		io.WriteString(c, reqs)
		br := bufio.NewReader(c)
		for _, p := range paths {
			if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || body != "answer"+p {
				t.Fatalf("%s: %d %q", p, resp.StatusCode, body)
			}
		}
	})
}

// TestWatchList: the sweeper's list of pending watches (SPEC HTTP-4: a
// watch left out would never start, one left in would start after its
// request ended) keeps exactly the watches added and not removed, in any
// order of removal, and ignores a remove of a watch not in it.
func TestWatchList(t *testing.T) {
	t.Run("HTTP-4/pending-watches-listed-exactly", func(t *testing.T) {
		for _, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}} {
			var l watchList
			ws := make([]*clientWatch, 4)
			for i := range ws {
				ws[i] = &clientWatch{since: int64(i)}
				l.add(ws[i])
			}
			left := map[*clientWatch]bool{ws[0]: true, ws[1]: true, ws[2]: true, ws[3]: true}
			for _, i := range order {
				l.remove(ws[i])
				l.remove(ws[i]) // not in the list any more: nothing happens
				delete(left, ws[i])
				seen := map[*clientWatch]bool{}
				for w, prev := l.first, (*clientWatch)(nil); w != nil; prev, w = w, w.next {
					if w.prev != prev || seen[w] || !left[w] {
						t.Fatalf("order %v after removing %d: bad list at watch %d", order, i, w.since)
					}
					seen[w] = true
				}
				if len(seen) != len(left) {
					t.Fatalf("order %v after removing %d: %d listed, want %d", order, i, len(seen), len(left))
				}
			}
		}
	})
}
