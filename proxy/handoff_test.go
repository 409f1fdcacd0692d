package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// ownHandler is a stand-in for the proxy's own endpoints: /own answers
// "own METHOD", /echo the request body, /sse two events with a flush each
// (the second once next is signalled), /hold one event and then waits for
// the request context (cancelled reports it), /hijack a hand-written answer
// on the hijacked connection (the pool's 529).
func ownHandler(next <-chan struct{}, cancelled chan<- struct{}) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/own", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "own "+r.Method)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Write(b)
	})
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-next:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: two\n\n")
	})
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		cancelled <- struct{}{}
	})
	mux.HandleFunc("/hijack", func(w http.ResponseWriter, r *http.Request) {
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer c.Close()
		rw.WriteString("HTTP/1.1 529 Overloaded\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno")
		rw.Flush()
	})
	return mux
}

// rawClient is one raw keep-alive client connection to the proxy.
type rawClient struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func newRawClient(t *testing.T, addr string) *rawClient {
	c := proxytest.Dial(t, addr)
	return &rawClient{t: t, c: c, br: bufio.NewReader(c)}
}

func (rc *rawClient) send(s string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatal(err)
	}
}

// expect reads one answer and checks its status and body and that the
// connection stays open.
func (rc *rawClient) expect(method string, status int, body string) {
	rc.t.Helper()
	resp, got := proxytest.ReadResponse(rc.t, rc.br, method)
	if resp.StatusCode != status || got != body || resp.Close {
		rc.t.Fatalf("%s: %d %q close=%v, want %d %q keep-alive", method, resp.StatusCode, got, resp.Close, status, body)
	}
}

// expectEOF checks that the proxy closed the connection.
func (rc *rawClient) expectEOF() {
	rc.t.Helper()
	if b, err := rc.br.ReadByte(); err == nil {
		rc.t.Fatalf("connection still open: read %q", b)
	}
}

func TestHandoffKeepAlive(t *testing.T) {
	next, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	origin := testworld.NewOrigin(t)
	echo := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) { io.Copy(c, c) })
	addr, srv := proxytest.Start(t, New, Config{Handler: ownHandler(next, cancelled), LoopbackDirect: true})

	steps := map[string]func(rc *rawClient){
		"own": func(rc *rawClient) {
			rc.send("POST /own HTTP/1.1\r\nHost: " + addr + "\r\nContent-Length: 3\r\n\r\nabc")
			rc.expect("POST", 200, "own POST")
		},
		"self": func(rc *rawClient) { // absolute-form naming the proxy itself (handoff.go selfTarget)
			rc.send("GET http://" + addr + "/own HTTP/1.1\r\nHost: " + addr + "\r\n\r\n")
			rc.expect("GET", 200, "own GET")
		},
		"proxied": func(rc *rawClient) {
			rc.send("GET " + origin.URL + "/ HTTP/1.1\r\nHost: " + origin.Addr + "\r\n\r\n")
			rc.expect("GET", 200, origin.Greeting())
		},
	}
	connect := func(rc *rawClient) {
		rc.send("CONNECT " + echo + " HTTP/1.1\r\nHost: " + echo + "\r\n\r\n")
		if st, _ := proxytest.ReadConnectReply(rc.t, rc.br); st != 200 {
			rc.t.Fatalf("CONNECT: %d", st)
		}
		rc.send("ping")
		b := make([]byte, 4)
		if _, err := io.ReadFull(rc.br, b); err != nil || string(b) != "ping" {
			rc.t.Fatalf("tunnel: %q %v", b, err)
		}
	}
	for _, order := range [][]string{
		{"own", "proxied", "self"}, {"own", "self", "proxied"}, {"proxied", "own", "self"},
		{"proxied", "self", "own"}, {"self", "own", "proxied"}, {"self", "proxied", "own"},
	} {
		t.Run("HTTP-5b/one-connection/"+strings.Join(order, "-")+"-connect", func(t *testing.T) {
			rc := newRawClient(t, addr)
			views := srv.handoff.delivered.Load()
			for _, name := range order {
				steps[name](rc)
				steps[name](rc) // twice: the second on a connection the first left
			}
			if n := srv.handoff.delivered.Load() - views; n != 1 {
				t.Fatalf("%d connections handed to net/http for one client connection, want 1 (its connection lives as long as the client's)", n)
			}
			connect(rc) // a CONNECT after own answers is proxied (the tunnel ends the loop)
		})
	}
	t.Run("HTTP-5b/pipelined", func(t *testing.T) {
		rc := newRawClient(t, addr)
		rc.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" +
			"GET " + origin.URL + "/ HTTP/1.1\r\nHost: " + origin.Addr + "\r\n\r\n" +
			"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n" +
			"HEAD /own HTTP/1.1\r\nHost: x\r\n\r\n" +
			"POST /own HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nskip" + // body not read by the handler
			"GET /own HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		rc.expect("POST", 200, "hello")
		rc.expect("GET", 200, origin.Greeting())
		rc.expect("POST", 200, "abcde")
		rc.expect("HEAD", 200, "")
		rc.expect("POST", 200, "own POST")
		resp, body := proxytest.ReadResponse(t, rc.br, "GET")
		if body != "own GET" || !resp.Close {
			t.Fatalf("last: %q close=%v", body, resp.Close)
		}
		rc.expectEOF()
	})
	t.Run("HTTP-5b/stream-flushes-per-event-then-next-call", func(t *testing.T) {
		rc := newRawClient(t, addr)
		rc.send("GET /sse HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(rc.br, &http.Request{Method: "GET"})
		if err != nil {
			t.Fatal(err)
		}
		sse := bufio.NewReader(resp.Body)
		if line, err := sse.ReadString('\n'); err != nil || line != "data: one\n" {
			t.Fatalf("first event before the second was sent: %q %v", line, err)
		}
		next <- struct{}{}
		rest, err := io.ReadAll(sse)
		if err != nil || string(rest) != "\ndata: two\n\n" || resp.Close {
			t.Fatalf("rest %q %v close=%v", rest, err, resp.Close)
		}
		steps["own"](rc)
		steps["proxied"](rc)
	})
	t.Run("HTTP-4/client-leaving-mid-stream-cancels-request", func(t *testing.T) {
		rc := newRawClient(t, addr)
		rc.send("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(rc.br, &http.Request{Method: "GET"})
		if err != nil {
			t.Fatal(err)
		}
		if line, _ := bufio.NewReader(resp.Body).ReadString('\n'); line != "data: one\n" {
			t.Fatalf("event %q", line)
		}
		rc.c.Close()
		select {
		case <-cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("the handler's context was not cancelled when the client left")
		}
	})
	t.Run("HTTP-1/http10-client", func(t *testing.T) {
		rc := newRawClient(t, addr)
		rc.send("GET /own HTTP/1.0\r\n\r\n")
		resp, body := proxytest.ReadResponse(t, rc.br, "GET")
		if body != "own GET" || !resp.Close {
			t.Fatalf("1.0: %q close=%v", body, resp.Close)
		}
		rc.expectEOF()
		rc = newRawClient(t, addr)
		rc.send("GET /own HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
		rc.expect("GET", 200, "own GET")
		rc.send("GET " + origin.URL + "/ HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
		rc.expect("GET", 200, origin.Greeting())
	})
	t.Run("HTTP-1/expect-100-continue", func(t *testing.T) {
		rc := newRawClient(t, addr)
		rc.send("PUT /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
		if line, err := rc.br.ReadString('\n'); err != nil || line != "HTTP/1.1 100 Continue\r\n" {
			t.Fatalf("interim: %q %v", line, err)
		}
		if line, _ := rc.br.ReadString('\n'); line != "\r\n" {
			t.Fatalf("interim end: %q", line)
		}
		rc.send("data")
		rc.expect("PUT", 200, "data")
		steps["own"](rc)
	})
	t.Run("HTTP-1/hijacked-answer-closes", func(t *testing.T) {
		rc := newRawClient(t, addr)
		rc.send("GET /hijack HTTP/1.1\r\nHost: x\r\n\r\nGET /own HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, body := proxytest.ReadResponse(t, rc.br, "GET")
		if resp.StatusCode != 529 || body != "no" {
			t.Fatalf("hijacked: %d %q", resp.StatusCode, body)
		}
		rc.expectEOF()
	})
	t.Run("HTTP-5b/malformed-chunked-body-closes", func(t *testing.T) {
		rc := newRawClient(t, addr)
		rc.send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nGET /own HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, _ := proxytest.ReadResponse(t, rc.br, "POST")
		if resp.StatusCode != 400 {
			t.Fatalf("malformed chunked body: %d", resp.StatusCode)
		}
		rc.expectEOF() // the connection is not at a request boundary: no second answer
	})
}

// TestHandoffShutdown: a keep-alive connection idle after an own answer is
// closed by Shutdown at once (SPEC LIS-3).
func TestHandoffShutdown(t *testing.T) {
	t.Run("LIS-3/idle-after-own-answer-closed", func(t *testing.T) {
		addr, srv := proxytest.Start(t, New, Config{Handler: ownHandler(nil, nil)})
		rc := newRawClient(t, addr)
		rc.send("GET /own HTTP/1.1\r\nHost: x\r\n\r\n")
		rc.expect("GET", 200, "own GET")
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		if err := srv.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v after %v (the idle connection held it)", err, time.Since(start))
		}
		rc.expectEOF()
	})
}

// BenchmarkSelfTarget is the check every absolute-form request makes for
// a target naming the proxy's own listener (SPEC HTTP-1, internal/lib/via), on a
// target that does not: the listener ports are compared without parsing.
func BenchmarkSelfTarget(b *testing.B) {
	s, err := New(Config{LoopbackDirect: true})
	if err != nil {
		b.Fatal(err)
	}
	testkit.Serve(b, s)
	head := &httpmsg.RequestHead{Target: "http://127.0.0.1:8080/v1/models"}
	b.ReportAllocs()
	for b.Loop() {
		if s.selfTarget(head) {
			b.Fatal("self")
		}
	}
}
