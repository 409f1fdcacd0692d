package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// TestLoopDetection: two proxies that name each other as gateway (or a
// gateway name that resolves back to the proxy, which GW-2's address check
// cannot see) must not forward in circles until descriptors run out.
func TestLoopDetection(t *testing.T) {
	lnA, _ := net.Listen("tcp", "127.0.0.1:0")
	lnB, _ := net.Listen("tcp", "127.0.0.1:0")
	cA := &countingListener{Listener: lnA}
	cB := &countingListener{Listener: lnB}
	mk := func(peer string) *Server {
		c, err := route.ParseGateway(peer, "gateway")
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Candidates: []candidate.Candidate{c}, Cooldown: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := mk(lnB.Addr().String()), mk(lnA.Addr().String())
	doneA, doneB := make(chan struct{}), make(chan struct{})
	go func() { a.Serve(cA); close(doneA) }()
	go func() { b.Serve(cB); close(doneB) }()
	t.Cleanup(func() {
		for _, s := range []*Server{a, b} {
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			s.Shutdown(ctx)
			cancel()
		}
		<-doneA
		<-doneB
	})
	origin := testworld.NewOrigin(t)

	t.Run("GW-2/plain-request-loop-answered-not-amplified", func(t *testing.T) {
		c := proxytest.Dial(t, lnA.Addr().String())
		fmt.Fprintf(c, "GET http://loop.test:%s/ HTTP/1.1\r\nHost: loop.test\r\n\r\n", strings.Split(origin.Addr, ":")[1])
		resp, body := proxytest.ReadResponse(t, bufio.NewReader(c), "GET")
		if resp.StatusCode != 508 && resp.StatusCode != 502 {
			t.Fatalf("status %d %q", resp.StatusCode, body)
		}
	})
	t.Run("GW-2/connect-loop-answered-not-amplified", func(t *testing.T) {
		c := proxytest.Dial(t, lnA.Addr().String())
		br := bufio.NewReader(c)
		io.WriteString(c, "CONNECT loop.test:443 HTTP/1.1\r\nHost: loop.test:443\r\n\r\n")
		if st, body := proxytest.ReadConnectReply(t, br); st/100 != 5 {
			t.Fatalf("status %d %q", st, body)
		}
	})
	// Each request crosses A→B→A once and stops: a handful of
	// connections, not thousands.
	if n := cA.n.Load() + cB.n.Load(); n > 12 {
		t.Fatalf("%d connections accepted: the loop was amplified", n)
	}
	if a.Engine().Status().Candidates[0].Failures == 0 {
		t.Fatal("the looping gateway recorded no failure")
	}
}

func TestSelfTarget(t *testing.T) {
	t.Run("HTTP-1/absolute-form-for-own-listener-served-not-looped", func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "own:"+r.URL.RequestURI()) })
		addr, _ := proxytest.Start(t, New, Config{Handler: h, LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		fmt.Fprintf(c, "GET http://%s/pool/p/v1/models?x=1 HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
		resp, body := proxytest.ReadResponse(t, bufio.NewReader(c), "GET")
		if resp.StatusCode != 200 || body != "own:/pool/p/v1/models?x=1" {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	})
}
