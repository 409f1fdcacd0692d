package proxy

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
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startProxy serves cfg on 127.0.0.1:0 and returns its address; the server
// is shut down by t.Cleanup.
func startProxy(t *testing.T, cfg Config) (string, *Server) {
	t.Helper()
	srv, err := New(cfg)
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

// fwSend writes raw to a new connection to the proxy and reads one answer
// (body read fully; a truncated body fails the test).
func fwSend(t *testing.T, addr, raw string) (*http.Response, string) {
	t.Helper()
	c := dialProxy(t, addr)
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	method, _, _ := strings.Cut(raw, " ")
	return readResponse(t, bufio.NewReader(c), method)
}

// tunnelGet sends GET /in-tunnel through an open CONNECT tunnel to a plain
// HTTP origin and returns the body.
func tunnelGet(t *testing.T, proxyAddr, target string) string {
	t.Helper()
	status, conn, br := selConnect(t, proxyAddr, target, "")
	if status != 200 {
		t.Fatalf("CONNECT %s: %d", target, status)
	}
	conn.Write([]byte("GET /in-tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
	_, body := readResponse(t, br, "GET")
	return body
}

// lastFailure returns "phase tier" of candidate key's last failure.
func lastFailure(t *testing.T, e *Engine, key string) string {
	t.Helper()
	for _, c := range e.Status().Candidates {
		if c.Key == key && c.LastFailure != nil {
			return c.LastFailure.Phase + " " + c.LastFailure.Tier
		}
	}
	return ""
}

// cooling reports whether the status document shows candidate key cooling
// for dest ("host:port", route.Dest): gateway-wide, or by a running
// host-scoped cooldown for dest (SPEC CD-1), as route.Cooldowns.Cooling
// answers the engine.
func cooling(e *Engine, key, dest string) bool {
	st := e.Status()
	for _, c := range st.Candidates {
		if c.Key != key {
			continue
		}
		if c.State == statusdoc.StateCooling {
			return true
		}
		for _, h := range c.HostCooldowns {
			if h.Host == dest && h.Until.After(st.Now) {
				return true
			}
		}
	}
	return false
}
