package engine_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startProxy serves cfg on 127.0.0.1:0 and returns its address; the server
// is shut down by t.Cleanup.
func startProxy(t *testing.T, cfg engine.Config) (string, *proxy.Server) {
	t.Helper()
	srv, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return testkit.Serve(t, srv), srv
}

// gateways parses gateway addresses into candidates, direct last when
// withDirect.
func gateways(t *testing.T, withDirect bool, addrs ...string) []candidate.Candidate {
	t.Helper()
	var cs []candidate.Candidate
	for _, a := range addrs {
		c, err := route.ParseGateway(a, "gateway")
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	if withDirect {
		cs = append(cs, candidate.Direct)
	}
	return cs
}

// dialProxy opens a raw connection to the proxy with a 10 s deadline.
func dialProxy(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// readResponse reads one response from br (body fully read).
func readResponse(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, string(b)
}

// tcpServer accepts one connection at a time on addr ("127.0.0.1:0" or
// "[::1]:0") and runs fn on it; it is closed by t.Cleanup.
func tcpServer(t *testing.T, addr string, fn func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	conns := make(chan net.Conn, 16)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
			go func() { defer c.Close(); fn(c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for {
			select {
			case c := <-conns:
				c.Close()
			default:
				return
			}
		}
	})
	return ln.Addr().String()
}

func mustContain(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%q does not contain %q", s, sub)
	}
}

// readConnectReply reads a CONNECT answer head (no body on 2xx) and returns
// its status; for non-2xx it also returns the body.
func readConnectReply(t *testing.T, br *bufio.Reader) (int, string) {
	t.Helper()
	status := 0
	length := 0
	for i := 0; ; i++ {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read CONNECT reply: %v", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if i == 0 {
			if len(line) < 12 {
				t.Fatalf("bad status line %q", line)
			}
			status = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
			continue
		}
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if status/100 == 2 {
		return status, ""
	}
	b := make([]byte, length)
	io.ReadFull(br, b)
	return status, string(b)
}
