package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

func TestForward(t *testing.T) {
	t.Run("HTTP-5/hop-by-hop-stripped-both-directions", func(t *testing.T) {
		origin := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "X-Resp-Hop")
			w.Header().Set("X-Resp-Hop", "secret")
			w.Header().Set("Keep-Alive", "timeout=5")
			w.Header().Set("X-End-To-End", "kept")
			io.WriteString(w, "ok")
		}))
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "GET %s/p?q=1 HTTP/1.1\r\nHost: %s\r\nConnection:\r\nConnection: X-Foo, X-Bar\r\nX-Foo: 1\r\nX-Bar: 2\r\nKeep-Alive: 300\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic Y2xpZW50OnNlY3JldA==\r\nTE: trailers\r\nUpgrade: websocket\r\nX-Kept: yes\r\n\r\n", origin.URL, origin.Addr)
		resp, body := proxytest.ReadResponse(t, br, "GET")
		if resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("status %d body %q", resp.StatusCode, body)
		}
		if resp.Header.Get("X-Resp-Hop") != "" || resp.Header.Get("Keep-Alive") != "" {
			t.Fatalf("response hop-by-hop leaked: %v", resp.Header)
		}
		if resp.Header.Get("X-End-To-End") != "kept" {
			t.Fatalf("end-to-end header lost: %v", resp.Header)
		}
		seen := origin.Requests()
		if len(seen) != 1 {
			t.Fatalf("origin saw %d requests", len(seen))
		}
		for _, h := range []string{"X-Foo", "X-Bar", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Te", "Upgrade"} {
			if v := seen[0].Header.Get(h); v != "" {
				t.Errorf("origin saw hop-by-hop %s: %q", h, v)
			}
		}
		if seen[0].Header.Get("X-Kept") != "yes" {
			t.Fatalf("end-to-end request header lost")
		}
		if seen[0].Host != origin.Addr {
			t.Fatalf("Host %q", seen[0].Host)
		}
	})

	t.Run("HTTP-5b/keep-alive-routes-per-request", func(t *testing.T) {
		a := testworld.NewNamedOrigin(t, "A")
		b := testworld.NewNamedOrigin(t, "B")
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		for _, o := range []*testworld.Origin{a, b, a} {
			fmt.Fprintf(c, "GET %s/ HTTP/1.1\r\nHost: %s\r\n\r\n", o.URL, o.Addr)
			resp, body := proxytest.ReadResponse(t, br, "GET")
			if resp.StatusCode != 200 || body != o.Greeting() {
				t.Fatalf("got %d %q, want %q", resp.StatusCode, body, o.Greeting())
			}
		}
		if a.Count() != 2 || b.Count() != 1 {
			t.Fatalf("A saw %d, B saw %d", a.Count(), b.Count())
		}
	})

	t.Run("HTTP-2/keep-alive-requests-carry-nothing-over", func(t *testing.T) {
		// A connection's plain requests share their head, target, body,
		// header slice and watch: nothing of one request may
		// reach the next one's upstream request.
		a := testworld.NewNamedOrigin(t, "A")
		b := testworld.NewNamedOrigin(t, "B")
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		reqs := []struct {
			o    *testworld.Origin
			head string
		}{
			{a, "POST %s/one HTTP/1.1\r\nHost: %s\r\nX-Only-First: 1\r\nContent-Length: 5\r\n\r\nfirst"},
			{a, "GET %s/two HTTP/1.1\r\nHost: %s\r\n\r\n"},
			{b, "PUT %s/three?q=3 HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n"},
			{a, "DELETE %s/four HTTP/1.1\r\nHost: %s\r\n\r\n"},
		}
		for _, r := range reqs {
			fmt.Fprintf(c, r.head, r.o.URL, r.o.Addr)
			resp, body := proxytest.ReadResponse(t, br, "GET")
			if resp.StatusCode != 200 || body != r.o.Greeting() {
				t.Fatalf("got %d %q, want %q", resp.StatusCode, body, r.o.Greeting())
			}
		}
		sa, sb := a.Requests(), b.Requests()
		if len(sa) != 3 || len(sb) != 1 {
			t.Fatalf("A saw %d, B saw %d requests", len(sa), len(sb))
		}
		type want struct{ method, uri, body, length, first string }
		for i, w := range []want{{"POST", "/one", "first", "5", "1"}, {"GET", "/two", "", "", ""}, {"DELETE", "/four", "", "", ""}} {
			got := sa[i]
			if got.Method != w.method || got.RequestURI != w.uri || string(got.Body) != w.body ||
				got.Header.Get("Content-Length") != w.length || got.Header.Get("X-Only-First") != w.first || got.Host != a.Addr {
				t.Errorf("A's request %d = %s %s body %q Content-Length %q X-Only-First %q Host %q, want %+v",
					i, got.Method, got.RequestURI, got.Body, got.Header.Get("Content-Length"), got.Header.Get("X-Only-First"), got.Host, w)
			}
		}
		if got := sb[0]; got.Method != "PUT" || got.RequestURI != "/three?q=3" || string(got.Body) != "abcd" || got.Host != b.Addr || got.Header.Get("X-Only-First") != "" {
			t.Errorf("B's request = %s %s body %q Host %q", got.Method, got.RequestURI, got.Body, got.Host)
		}
	})

	t.Run("HTTP-6/all-dead-502-within-connect-timeout", func(t *testing.T) {
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, testworld.RefusedAddr(t), testworld.RefusedAddr(t)), ConnectTimeout: 2 * time.Second})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		start := time.Now()
		io.WriteString(c, "GET http://example.test/ HTTP/1.1\r\nHost: example.test\r\n\r\n")
		resp, body := proxytest.ReadResponse(t, br, "GET")
		if resp.StatusCode != 502 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		proxytest.MustContain(t, body, "all candidates failed")
		if el := time.Since(start); el > 4*time.Second {
			t.Fatalf("took %v", el)
		}
	})

	t.Run("GW-1/dead-first-gateway-then-working-gateway", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		good := testworld.NewGateway(t)
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, true, testworld.RefusedAddr(t), good.Addr)})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "POST %s/x HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\n\r\nhello", origin.URL, origin.Addr)
		resp, body := proxytest.ReadResponse(t, br, "POST")
		if resp.StatusCode != 200 || body != origin.Greeting() {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
		if good.Requests() != 1 || origin.Count() != 1 || string(origin.Requests()[0].Body) != "hello" {
			t.Fatalf("gateway %d origin %d", good.Requests(), origin.Count())
		}
	})

	t.Run("GW-5/loopback-goes-direct-never-to-a-gateway", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t)
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, true, gw.Addr), LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "GET %s/ HTTP/1.1\r\nHost: %s\r\n\r\n", origin.URL, origin.Addr)
		if resp, _ := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if gw.Accepted() != 0 {
			t.Fatalf("gateway was used for a loopback destination")
		}
	})

	t.Run("HTTP-1/origin-form-goes-to-own-handler", func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "own:"+r.URL.Path) })
		addr, _ := proxytest.Start(t, New, Config{Handler: h})
		resp, err := http.Get("http://" + addr + "/_dual-proxy/status")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "own:/_dual-proxy/status" {
			t.Fatalf("got %q", b)
		}
		http.DefaultClient.CloseIdleConnections()
	})
}

func TestSmuggling(t *testing.T) {
	cases := []struct {
		name, head string
		status     int
	}{
		{"HTTP-5/cl-and-te-chunked", "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n", 400},
		{"HTTP-5/cl-and-te-chunked-comma", "Content-Length: 4\r\nTransfer-Encoding: chunked,\r\n", 400},
		{"HTTP-5/cl-and-te-chunked-space", "Transfer-Encoding: chunked \r\nContent-Length: 4\r\n", 400},
		{"HTTP-5/cl-and-te-gzip-chunked", "Content-Length: 4\r\nTransfer-Encoding: gzip, chunked\r\n", 400},
		{"HTTP-5/conflicting-content-length", "Content-Length: 4\r\nContent-Length: 5\r\n", 400},
		{"HTTP-5/content-length-list-conflict", "Content-Length: 4, 5\r\n", 400},
		{"HTTP-5/unknown-coding-501", "Transfer-Encoding: gzip\r\n", 501},
		{"HTTP-5/obs-fold", "X-A: 1\r\n continued\r\n", 400},
		{"HTTP-5/space-before-colon", "Content-Length : 4\r\n", 400},
		{"HTTP-5/lowercase-names-cl-and-te", "content-length: 4\r\ntransfer-encoding: chunked\r\n", 400},
		{"HTTP-5/te-uppercase-value-and-cl", "Content-Length: 4\r\nTransfer-Encoding: CHUNKED\r\n", 400},
		{"HTTP-5/te-twice-chunked-not-final", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400},
		{"HTTP-5/te-chunked-then-gzip", "Transfer-Encoding: chunked, gzip\r\n", 400},
		{"HTTP-5/te-empty", "Transfer-Encoding: \r\n", 400},
		{"HTTP-5/te-identity-501", "Transfer-Encoding: identity\r\n", 501},
		{"HTTP-5/content-length-plus-sign", "Content-Length: +4\r\n", 400},
		{"HTTP-5/content-length-negative", "Content-Length: -1\r\n", 400},
		{"HTTP-5/content-length-hex", "Content-Length: 0x4\r\n", 400},
		{"HTTP-5/cr-in-field-value", "X-A: a\rContent-Length: 4\r\n", 400},
		{"HTTP-5/nul-in-field-value", "X-A: a\x00b\r\n", 400},
		{"HTTP-5/non-token-field-name", "X(A): 1\r\n", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			origin := testworld.NewOrigin(t)
			addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
			c := proxytest.Dial(t, addr)
			br := bufio.NewReader(c)
			fmt.Fprintf(c, "POST %s/ HTTP/1.1\r\nHost: %s\r\n%s\r\n0\r\n\r\n", origin.URL, origin.Addr, tc.head)
			resp, _ := proxytest.ReadResponse(t, br, "POST")
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if !resp.Close {
				t.Fatalf("connection not closed")
			}
			if _, err := br.ReadByte(); err == nil {
				t.Fatal("connection still open after refusal")
			}
			if origin.Count() != 0 {
				t.Fatalf("origin received %d requests", origin.Count())
			}
		})
	}
	_ = strings.TrimSpace
}

func TestConnectionReuse(t *testing.T) {
	t.Run("HTTP-5b/origin-form-then-proxy-request-on-same-connection", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "own") })
		addr, _ := proxytest.Start(t, New, Config{Handler: h, LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		io.WriteString(c, "GET /_dual-proxy/status HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
		resp, body := proxytest.ReadResponse(t, br, "GET")
		if body != "own" || resp.Close {
			t.Fatalf("own endpoint: %q close=%v (the connection must stay open for the next request)", body, resp.Close)
		}
		fmt.Fprintf(c, "GET %s/ HTTP/1.1\r\nHost: %s\r\n\r\n", origin.URL, origin.Addr)
		if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || body != origin.Greeting() {
			t.Fatalf("proxy request: %d %q", resp.StatusCode, body)
		}
	})
}

func TestBodyBudget(t *testing.T) {
	t.Run("HTTP-2/buffering-budget-bounds-memory", func(t *testing.T) {
		s := &Server{}
		n := int64(0)
		for s.reserveBody(engine.MaxReplayBody) {
			n++
			if n > 100 {
				t.Fatal("budget never ran out")
			}
		}
		if n*engine.MaxReplayBody > maxBuffered || n == 0 {
			t.Fatalf("%d bodies of 8 MiB reserved, budget %d", n, maxBuffered)
		}
		// Past the budget a body is streamed (not replayable), not refused.
		head := &httpmsg.RequestHead{ContentLength: 5}
		b, err := readBody(bufio.NewReader(strings.NewReader("hello")), bufio.NewWriter(io.Discard), head, s.reserveBody)
		if err != nil || b.Rest == nil || b.reserved != 0 {
			t.Fatalf("body %+v err %v: want streamed", b, err)
		}
		s.releaseBody(engine.MaxReplayBody)
		b, err = readBody(bufio.NewReader(strings.NewReader("hello")), bufio.NewWriter(io.Discard), head, s.reserveBody)
		if err != nil || b.Rest != nil || string(b.Buf) != "hello" || b.reserved != 5 {
			t.Fatalf("body %+v err %v: want buffered", b, err)
		}
	})
}

func TestConnCtxInterrupter(t *testing.T) {
	// connCtx is the upstream.Interrupter of a connection's plain
	// requests: one AfterFunc per connection instead of one per request
	//, with context.AfterFunc's stop semantics.
	t.Run("HTTP-4/connection-context-ending-interrupts-the-armed-exchange-once", func(t *testing.T) {
		var cc connCtx
		ctx, cancel := cc.get(context.Background())
		called := make(chan struct{}, 2)
		cc.Arm(func() { called <- struct{}{} })
		cancel(errClientGone)
		select {
		case <-called:
		case <-time.After(5 * time.Second):
			t.Fatal("the armed interrupt did not run when the context ended")
		}
		if cc.Disarm() {
			t.Fatal("Disarm after the interrupt ran reports true (the connection would be pooled)")
		}
		cc.Arm(func() { called <- struct{}{} }) // ended: runs at once
		select {
		case <-called:
		default:
			t.Fatal("Arm on an ended context did not interrupt at once")
		}
		if ctx.Err() == nil {
			t.Fatal("context not ended")
		}
	})
	t.Run("HTTP-4/disarmed-exchange-is-not-interrupted-later", func(t *testing.T) {
		var cc connCtx
		_, cancel := cc.get(context.Background())
		var ran atomic.Bool
		for range 3 { // a connection's sequential requests
			cc.Arm(func() { ran.Store(true) })
			if !cc.Disarm() {
				t.Fatal("Disarm of a live context reports false")
			}
		}
		cancel(nil)
		testkit.WaitFor(t, 5*time.Second, "the AfterFunc to run", func() bool {
			cc.mu.Lock()
			defer cc.mu.Unlock()
			return cc.ended
		})
		if ran.Load() {
			t.Fatal("a disarmed interrupt ran when the context ended")
		}
	})
}
