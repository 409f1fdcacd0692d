// Package proxytest is what the tests of the forwarding proxy's two
// packages share: starting a proxy on a loopback port, talking to it as a
// client does (raw requests and their answers, CONNECT and its reply),
// naming gateways as candidates, reading the engine's decisions, and a
// loopback TCP peer that runs a function per connection.
//
// It imports neither proxy nor proxy/engine, so the internal tests of both
// (package proxy, package engine) can use it without an import cycle; what
// it needs of a server or an engine it takes as a type parameter or a small
// interface.
package proxytest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// connDeadline bounds every read and write on a connection Dial opens.
const connDeadline = 10 * time.Second

// Start builds a server from cfg with build (proxy.New) and serves it on
// 127.0.0.1:0 (testkit.Serve), returning its "host:port" and the server.
// A build error fails tb; the server is shut down by tb.Cleanup.
func Start[C any, S testkit.Server](tb testing.TB, build func(C) (S, error), cfg C) (string, S) {
	tb.Helper()
	srv, err := build(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return testkit.Serve(tb, srv), srv
}

// Gateway parses one gateway URL ("http://127.0.0.1:3128",
// "socks5://…") into a candidate named "gateway"; a parse error fails tb.
func Gateway(tb testing.TB, rawURL string) candidate.Candidate {
	tb.Helper()
	c, err := route.ParseGateway(rawURL, "gateway")
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// Gateways parses gateway URLs into candidates in order (Gateway), with
// candidate.Direct last when withDirect.
func Gateways(tb testing.TB, withDirect bool, rawURLs ...string) []candidate.Candidate {
	tb.Helper()
	var cs []candidate.Candidate
	for _, u := range rawURLs {
		cs = append(cs, Gateway(tb, u))
	}
	if withDirect {
		cs = append(cs, candidate.Direct)
	}
	return cs
}

// Dial opens a raw TCP connection to addr (a proxy's listener) with a
// 10 s deadline for every read and write; a dial error fails tb and tb.Cleanup closes it.
func Dial(tb testing.TB, addr string) net.Conn {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(connDeadline))
	tb.Cleanup(func() { c.Close() })
	return c
}

// ReadResponse reads one answer to a request of method from br and its
// whole body; a head or body that cannot be read fails tb.
func ReadResponse(tb testing.TB, br *bufio.Reader, method string) (*http.Response, string) {
	tb.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		tb.Fatalf("read response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		tb.Fatalf("read body: %v", err)
	}
	return resp, string(b)
}

// Send writes raw, a whole request as bytes, to a new connection to the
// proxy at addr and reads one answer (ReadResponse, for the method raw
// starts with): a truncated body fails tb.
func Send(tb testing.TB, addr, raw string) (*http.Response, string) {
	tb.Helper()
	c := Dial(tb, addr)
	if _, err := io.WriteString(c, raw); err != nil {
		tb.Fatal(err)
	}
	method, _, _ := strings.Cut(raw, " ")
	return ReadResponse(tb, bufio.NewReader(c), method)
}

// Get sends an absolute-form GET for rawURL ("http://host/path") with
// Connection: close and extra header lines (each ending in "\r\n") to the
// proxy at proxyAddr, and returns the answer with its body read. A head
// that cannot be read fails tb; the body's read error is returned instead,
// for the tests of answers cut short.
func Get(tb testing.TB, proxyAddr, rawURL, extra string) (*http.Response, string, error) {
	tb.Helper()
	c := Dial(tb, proxyAddr)
	host := strings.TrimPrefix(rawURL, "http://")
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host = host[:i]
	}
	if _, err := io.WriteString(c, "GET "+rawURL+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n"+extra+"\r\n"); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "GET"})
	if err != nil {
		tb.Fatalf("read response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

// ReadConnectReply reads the head of the answer to a CONNECT from br and
// returns its status; a 2xx has no body (the tunnel's bytes follow), any
// other status's Content-Length bytes of body are returned too. A head
// that cannot be read fails tb.
func ReadConnectReply(tb testing.TB, br *bufio.Reader) (int, string) {
	tb.Helper()
	status := 0
	length := 0
	for i := 0; ; i++ {
		line, err := br.ReadString('\n')
		if err != nil {
			tb.Fatalf("read CONNECT reply: %v", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if i == 0 {
			if len(line) < 12 {
				tb.Fatalf("bad status line %q", line)
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

// Connect sends "CONNECT target" (with extra header lines, each ending in
// "\r\n") on a new connection to the proxy at proxyAddr and returns the
// reply's status (ReadConnectReply), the connection and the reader the
// tunnel's bytes are read from.
func Connect(tb testing.TB, proxyAddr, target, extra string) (int, net.Conn, *bufio.Reader) {
	tb.Helper()
	status, _, c, br := connect(tb, proxyAddr, target, extra)
	return status, c, br
}

// Tunnel opens a CONNECT tunnel to target through the proxy at proxyAddr
// and returns its TCP connection (for half-closes) and the reader of the
// reply, which may hold the first bytes the far end sent. A status other
// than 200 fails tb, naming the status and the reply's body.
func Tunnel(tb testing.TB, proxyAddr, target string) (*net.TCPConn, *bufio.Reader) {
	tb.Helper()
	status, body, c, br := connect(tb, proxyAddr, target, "")
	if status != 200 {
		tb.Fatalf("CONNECT %s: %d %q", target, status, body)
	}
	return c.(*net.TCPConn), br
}

// connect is Connect, with the body of a reply other than 2xx.
func connect(tb testing.TB, proxyAddr, target, extra string) (int, string, net.Conn, *bufio.Reader) {
	tb.Helper()
	c := Dial(tb, proxyAddr)
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n"+extra+"\r\n"); err != nil {
		tb.Fatal(err)
	}
	br := bufio.NewReader(c)
	status, body := ReadConnectReply(tb, br)
	return status, body, c, br
}

// TunnelGet opens a CONNECT tunnel to target, a plain HTTP origin, through
// the proxy at proxyAddr (Tunnel), sends "GET /in-tunnel" through it and
// returns the answer's body.
func TunnelGet(tb testing.TB, proxyAddr, target string) string {
	tb.Helper()
	conn, br := Tunnel(tb, proxyAddr, target)
	conn.Write([]byte("GET /in-tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
	_, body := ReadResponse(tb, br, "GET")
	return body
}

// Decider is what LastDecision reads: an engine's ring of recent
// decisions, oldest first (*engine.Engine).
type Decider interface {
	Decisions() []statusdoc.Decision
}

// LastDecision returns e's latest decision; none recorded fails tb.
func LastDecision(tb testing.TB, e Decider) statusdoc.Decision {
	tb.Helper()
	ds := e.Decisions()
	if len(ds) == 0 {
		tb.Fatal("no decision recorded")
	}
	return ds[len(ds)-1]
}

// StatusSource is what LastFailure reads: an engine's status document
// (*engine.Engine).
type StatusSource interface {
	Status() statusdoc.Status
}

// LastFailure returns "phase tier" of the last failure e's status document
// shows for candidate key ("connect-response gateway"), "" for none.
func LastFailure(tb testing.TB, e StatusSource, key string) string {
	tb.Helper()
	for _, c := range e.Status().Candidates {
		if c.Key == key && c.LastFailure != nil {
			return c.LastFailure.Phase + " " + c.LastFailure.Tier
		}
	}
	return ""
}

// TCPServer listens on addr ("127.0.0.1:0" or "[::1]:0") and runs fn on
// each accepted connection in a goroutine of its own, closing the
// connection when fn returns; it returns the listener's "host:port". A
// tb.Cleanup closes the listener, waits for the accept loop and closes
// every accepted connection, so an fn still reading returns.
func TCPServer(tb testing.TB, addr string, fn func(net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { defer c.Close(); fn(c) }()
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// MustContain fails tb unless s contains sub.
func MustContain(tb testing.TB, s, sub string) {
	tb.Helper()
	if !strings.Contains(s, sub) {
		tb.Fatalf("%q does not contain %q", s, sub)
	}
}
