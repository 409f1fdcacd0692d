package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/testworld"
)

// Attack round five: this session's changes (the CONNECT watch's
// half-close probe, plain requests' reused per-connection state, raw
// read(2)/write(2) on client and upstream connections, the route cache
// memo) with real sockets on 127.0.0.1.

// mixedGateway is an HTTP gateway that answers plain requests at once
// (keep-alive, "ok:" and the request-target) and CONNECTs with 200 once
// release is closed, then answers "got:" and what the tunnel carried to
// its EOF.
func mixedGateway(t *testing.T) (addr string, release chan struct{}) {
	release = make(chan struct{})
	addr = manyServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			h, err := httpmsg.ReadRequestHead(br)
			if err != nil {
				return
			}
			if h.Method != "CONNECT" {
				b := "ok:" + h.Target
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
				continue
			}
			<-release
			io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
			got, _ := io.ReadAll(br)
			io.WriteString(c, "got:"+string(got))
			return
		}
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return addr, release
}

func TestAttackRound5Connect(t *testing.T) {
	for _, early := range []string{"", "ping"} {
		t.Run("CON-1/half-close-during-a-slow-open-after-plain-requests-on-the-connection/early="+early, func(t *testing.T) {
			// The connection's reads went raw with its first plain request
			// (clientio.go); the CONNECT's watch and probe still work.
			gw, release := mixedGateway(t)
			addr, _ := startProxy(t, Config{Candidates: gateways(t, false, "http://"+gw), ConnectTimeout: 30 * time.Second})
			c := dialProxy(t, addr)
			br := bufio.NewReader(c)
			for i := range 3 {
				fmt.Fprintf(c, "GET http://example.test/%d HTTP/1.1\r\nHost: example.test\r\n\r\n", i)
				if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || body != fmt.Sprintf("ok:http://example.test/%d", i) {
					t.Fatalf("plain %d: %d %q", i, resp.StatusCode, body)
				}
			}
			io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n"+early)
			waitStack(t, 10*time.Second, "proxy.(*clientWatch).run")
			c.(*net.TCPConn).CloseWrite()
			first := make([]byte, 1)
			if _, err := io.ReadFull(br, first); err != nil || string(first) != "H" {
				t.Fatalf("first byte %q %v: the open was abandoned", first, err)
			}
			close(release)
			rest, err := io.ReadAll(br)
			want := "HTTP/1.1 200 Connection established\r\n\r\ngot:" + early
			if got := string(first) + string(rest); got != want || err != nil {
				t.Fatalf("client read %q %v, want %q", got, err, want)
			}
			waitNoStack(t, 10*time.Second, "proxy.(*clientWatch).halfClosed", "proxy.(*clientWatch).run")
		})
	}

	t.Run("CON-1/racing-opens-of-half-closed-clients-leave-nothing-behind", func(t *testing.T) {
		// A silent first gateway, a slow second one raced after RaceDelay:
		// clients that half-close right after their CONNECT (and early
		// bytes) all get their tunnel; the losing attempts, the watches
		// and their probes' tickers all end.
		silent := newSilentGateway(t)
		gw, release := mixedGateway(t)
		addr, srv := startProxy(t, Config{Candidates: gateways(t, false, "http://"+silent.Addr, "http://"+gw),
			ConnectTimeout: 30 * time.Second, RaceDelay: 20 * time.Millisecond})
		before := runtime.NumGoroutine()
		const n = 20
		conns := make([]net.Conn, n)
		for i := range conns {
			conns[i] = dialProxy(t, addr)
			fmt.Fprintf(conns[i], "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\nearly%d", i)
			conns[i].(*net.TCPConn).CloseWrite()
		}
		waitUntil(t, 10*time.Second, "the watches never probed", func() bool { return countStacks("proxy.(*clientWatch).halfClosed") == n })
		close(release)
		for i, c := range conns {
			got, err := io.ReadAll(c)
			want := fmt.Sprintf("HTTP/1.1 200 Connection established\r\n\r\ngot:early%d", i)
			if string(got) != want || err != nil {
				t.Fatalf("client %d read %q %v, want %q", i, got, err, want)
			}
			c.Close()
		}
		waitUntil(t, 10*time.Second, "losing attempts left open", func() bool { return silent.Open() == 0 })
		waitNoStack(t, 10*time.Second, append(openFrames, "proxy.(*clientWatch).halfClosed", "proxy.(*tunnel).pipe")...)
		limit := before + int(srv.maxIdle) + 4
		waitUntil(t, 10*time.Second, "goroutines left over", func() bool { return runtime.NumGoroutine() <= limit })
	})

	t.Run("CON-2/early-bytes-past-the-watch-buffer-then-a-half-close-arrive-whole", func(t *testing.T) {
		// More early bytes than br holds (4 KiB): the watch ends without a
		// probe, the open runs on, and every byte reaches the destination.
		gw, release := mixedGateway(t)
		addr, _ := startProxy(t, Config{Candidates: gateways(t, false, "http://"+gw), ConnectTimeout: 30 * time.Second})
		c := dialProxy(t, addr)
		early := string(pattern(10000))
		io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n")
		waitStack(t, 10*time.Second, "proxy.(*clientWatch).run")
		io.WriteString(c, early)
		c.(*net.TCPConn).CloseWrite()
		waitNoStack(t, 10*time.Second, "proxy.(*clientWatch).run")
		close(release)
		got, err := io.ReadAll(c)
		if want := "HTTP/1.1 200 Connection established\r\n\r\ngot:" + early; string(got) != want || err != nil {
			t.Fatalf("client read %d bytes %v, want %d", len(got), err, len(want))
		}
	})

	t.Run("CON-1/plain-requests-then-a-tunnel-on-one-connection-carry-bytes-both-ways", func(t *testing.T) {
		gw, release := mixedGateway(t)
		close(release)
		addr, _ := startProxy(t, Config{Candidates: gateways(t, false, "http://"+gw)})
		c := dialProxy(t, addr)
		br := bufio.NewReader(c)
		io.WriteString(c, "GET http://example.test/a HTTP/1.1\r\nHost: example.test\r\n\r\n")
		if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || body != "ok:http://example.test/a" {
			t.Fatalf("plain: %d %q", resp.StatusCode, body)
		}
		payload := string(pattern(100000))
		io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n"+payload[:10])
		if st, body := readConnectReply(t, br); st != 200 {
			t.Fatalf("CONNECT %d %q", st, body)
		}
		io.WriteString(c, payload[10:])
		c.(*net.TCPConn).CloseWrite()
		got, err := io.ReadAll(br)
		if err != nil || string(got) != "got:"+payload {
			t.Fatalf("tunnel carried %d bytes (%v), want %d", len(got), err, len(payload)+4)
		}
	})

}

func TestAttackRound5Plain(t *testing.T) {
	t.Run("HTTP-2/a-head-with-many-fields-then-a-short-one-carries-nothing-over", func(t *testing.T) {
		a := testworld.NewNamedOrigin(t, "A")
		addr, _ := startProxy(t, Config{LoopbackDirect: true})
		c := dialProxy(t, addr)
		br := bufio.NewReader(c)
		var many strings.Builder
		for i := range 60 {
			fmt.Fprintf(&many, "X-Field-%d: %s\r\n", i, strings.Repeat("v", 100))
		}
		heads := []string{
			"POST %s/one HTTP/1.1\r\nHost: %s\r\nCookie: secret=1\r\n" + many.String() + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: t\r\n\r\n",
			"GET %s/two HTTP/1.1\r\nHost: %s\r\n\r\n",
			"OPTIONS %s/three HTTP/1.1\r\nHost: %s\r\nX-Third: 3\r\n\r\n",
			"GET %s/four?x HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n\r\n",
		}
		var all strings.Builder // pipelined: every head in one write
		for _, h := range heads {
			fmt.Fprintf(&all, h, a.URL, a.Addr)
		}
		io.WriteString(c, all.String())
		for i := range heads {
			if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || body != a.Greeting() {
				t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
			}
		}
		rs := a.Requests()
		if len(rs) != 4 {
			t.Fatalf("origin saw %d requests", len(rs))
		}
		if string(rs[0].Body) != "abc" || rs[0].Header.Get("X-Field-59") == "" || rs[0].Header.Get("Cookie") != "secret=1" {
			t.Fatalf("first request %s %q %v", rs[0].Method, rs[0].Body, rs[0].Header)
		}
		for i, r := range rs[1:] {
			if len(r.Body) != 0 || r.Header.Get("Cookie") != "" || r.Header.Get("X-Field-0") != "" || r.Header.Get("X-Trailer") != "" ||
				(i != 1 && r.Header.Get("X-Third") != "") || r.Header.Get("Transfer-Encoding") != "" {
				t.Errorf("request %d %s %s carries %q %v", i+2, r.Method, r.RequestURI, r.Body, r.Header)
			}
		}
		if rs[1].RequestURI != "/two" || rs[2].Method != "OPTIONS" || rs[3].RequestURI != "/four?x" {
			t.Errorf("targets %s %s %s", rs[1].RequestURI, rs[2].RequestURI, rs[3].RequestURI)
		}
	})

	t.Run("HTTP-1/a-bad-request-after-reused-heads-gets-its-400", func(t *testing.T) {
		a := testworld.NewNamedOrigin(t, "A")
		addr, _ := startProxy(t, Config{LoopbackDirect: true})
		c := dialProxy(t, addr)
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "GET %s/ok HTTP/1.1\r\nHost: %s\r\nX-Long: %s\r\n\r\n", a.URL, a.Addr, strings.Repeat("z", 3000))
		readResponse(t, br, "GET")
		io.WriteString(c, "GET http://[bad/ HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, _ := readResponse(t, br, "GET"); resp.StatusCode != 400 {
			t.Fatalf("status %d, want 400", resp.StatusCode)
		}
	})

	t.Run("HTTP-1/plain-requests-and-own-endpoint-requests-interleaved-on-one-connection", func(t *testing.T) {
		// Plain requests reuse their head; a hand-off keeps the one it
		// was read into: alternating them must mix nothing up.
		a := testworld.NewNamedOrigin(t, "A")
		addr, _ := startProxy(t, Config{LoopbackDirect: true})
		c := dialProxy(t, addr)
		br := bufio.NewReader(c)
		for i := range 4 {
			fmt.Fprintf(c, "GET %s/p%d HTTP/1.1\r\nHost: %s\r\nX-N: %d\r\n\r\n", a.URL, i, a.Addr, i)
			if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || body != a.Greeting() {
				t.Fatalf("plain %d: %d %q", i, resp.StatusCode, body)
			}
			fmt.Fprintf(c, "GET http://%s/_dual-proxy/status HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
			if resp, body := readResponse(t, br, "GET"); body == a.Greeting() || (resp.StatusCode != 200 && resp.StatusCode != 404) {
				t.Fatalf("own endpoint %d: %d %q", i, resp.StatusCode, body)
			}
		}
		for i, r := range a.Requests() {
			if r.RequestURI != fmt.Sprintf("/p%d", i) || r.Header.Get("X-N") != fmt.Sprint(i) {
				t.Fatalf("origin's request %d: %s %v", i, r.RequestURI, r.Header)
			}
		}
	})

	// A pooled upstream connection the origin closed (FIN, or a reset)
	// between two requests: a POST is sent once, on a fresh connection or
	// not at all (never replayed silently); a GET gets its answer.
	for _, rst := range []bool{false, true} {
		for _, method := range []string{"POST", "PUT", "GET"} {
			t.Run(fmt.Sprintf("HTTP-3/%s-after-the-origin-closed-its-pooled-connection/rst=%v", method, rst), func(t *testing.T) {
				var seen atomic.Int32
				var bodies atomic.Int32
				closed := make(chan struct{}, 4)
				o := manyServer(t, func(c net.Conn) {
					br := bufio.NewReader(c)
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b, _ := io.ReadAll(req.Body)
					seen.Add(1)
					if len(b) > 0 {
						bodies.Add(1)
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
					if rst {
						c.(*net.TCPConn).SetLinger(0)
					}
					c.Close() // the pooled connection is dead
					closed <- struct{}{}
				})
				addr, _ := startProxy(t, Config{LoopbackDirect: true})
				c := dialProxy(t, addr)
				br := bufio.NewReader(c)
				fmt.Fprintf(c, "GET http://%s/first HTTP/1.1\r\nHost: %s\r\n\r\n", o, o)
				if resp, _ := readResponse(t, br, "GET"); resp.StatusCode != 200 {
					t.Fatalf("first: %d", resp.StatusCode)
				}
				<-closed // its FIN (or reset) is on its way to the proxy's idle connection
				body := ""
				if method != "GET" {
					body = "payload"
				}
				fmt.Fprintf(c, "%s http://%s/second HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", method, o, o, len(body), body)
				resp, got := readResponse(t, br, method)
				if resp.StatusCode != 200 || got != "ok" {
					t.Fatalf("second: %d %q (origin saw %d)", resp.StatusCode, got, seen.Load())
				}
				if n := seen.Load(); n != 2 {
					t.Fatalf("origin saw %d requests, want 2", n)
				}
			})
		}
	}

	for _, method := range []string{"POST", "GET"} {
		t.Run("HTTP-3/origin-that-reads-the-request-and-closes-on-a-pooled-connection/"+method, func(t *testing.T) {
			// The second request on the pooled connection is read, then the
			// connection closes without an answer: a POST is not replayed
			// (502), a GET is retried at most once.
			var seen atomic.Int32
			o := manyServer(t, func(c net.Conn) {
				br := bufio.NewReader(c)
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.ReadAll(req.Body)
					if seen.Add(1) == 2 {
						return // the second request: close unanswered
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			})
			addr, _ := startProxy(t, Config{LoopbackDirect: true})
			c := dialProxy(t, addr)
			br := bufio.NewReader(c)
			fmt.Fprintf(c, "GET http://%s/first HTTP/1.1\r\nHost: %s\r\n\r\n", o, o)
			readResponse(t, br, "GET")
			fmt.Fprintf(c, "%s http://%s/second HTTP/1.1\r\nHost: %s\r\nContent-Length: 1\r\n\r\nx", method, o, o)
			resp, _ := readResponse(t, br, method)
			n := seen.Load()
			switch method {
			case "POST":
				if resp.StatusCode != 502 || n != 2 {
					t.Fatalf("POST: status %d, origin saw %d requests; want 502 and 2", resp.StatusCode, n)
				}
			default:
				if resp.StatusCode != 200 || n != 3 {
					t.Fatalf("GET: status %d, origin saw %d requests; want 200 and 3", resp.StatusCode, n)
				}
			}
		})
	}
}
