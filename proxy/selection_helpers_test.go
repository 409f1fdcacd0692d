package proxy

// Helpers for the selection tests (selection_*_test.go, race_test.go,
// health_test.go): a proxy with its engine, raw CONNECT and GET through it,
// a captured slog buffer, a settable clock, and a silent gateway that counts
// its open connections.

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// selProxy serves cfg on loopback and returns its address and engine. The
// engine is closed (health loop stopped) and the server shut down by
// t.Cleanup.
func selProxy(t *testing.T, cfg Config) (string, *Engine) {
	t.Helper()
	addr, srv := startProxy(t, cfg)
	e := srv.Engine()
	t.Cleanup(e.Close) // runs before the shutdown registered by startProxy
	return addr, e
}

// selCand parses one gateway URL into a candidate.
func selCand(t *testing.T, raw string) candidate.Candidate {
	t.Helper()
	c, err := route.ParseGateway(raw, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// selConnect sends "CONNECT target" (plus extra header lines, each ending
// in \r\n) and returns the answer's status, the connection and its reader.
func selConnect(t *testing.T, proxyAddr, target, extra string) (int, net.Conn, *bufio.Reader) {
	t.Helper()
	c := dialProxy(t, proxyAddr)
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n"+extra+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	status, _ := readConnectReply(t, br)
	return status, c, br
}

// selGet sends an absolute-form GET for rawURL (plus extra header lines)
// and returns the response with its body read. The body error, if any, is
// returned instead of failing the test.
func selGet(t *testing.T, proxyAddr, rawURL, extra string) (*http.Response, string, error) {
	t.Helper()
	c := dialProxy(t, proxyAddr)
	host := strings.TrimPrefix(rawURL, "http://")
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host = host[:i]
	}
	if _, err := io.WriteString(c, "GET "+rawURL+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n"+extra+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "GET"})
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

// selLastDecision returns the engine's latest decision.
func selLastDecision(t *testing.T, e *Engine) statusdoc.Decision {
	t.Helper()
	ds := e.Decisions()
	if len(ds) == 0 {
		t.Fatal("no decision recorded")
	}
	return ds[len(ds)-1]
}

// silentGateway accepts TCP and never answers (a dead-but-silent gateway,
// SPEC ORD-6); it reads until the peer closes and counts the connections
// still open, so tests can prove the proxy closed its losers. With answer
// >= 0 it answers every CONNECT with 200 after that delay (and relays
// nothing).
type silentGateway struct {
	Addr     string
	open     atomic.Int64
	accepted atomic.Int64
	answer   time.Duration // < 0: never
}

func newSilentGateway(t *testing.T) *silentGateway { return newFakeGateway(t, -1) }

func newFakeGateway(t *testing.T, answer time.Duration) *silentGateway {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &silentGateway{Addr: ln.Addr().String(), answer: answer}
	var (
		wg         sync.WaitGroup // connection readers
		mu         sync.Mutex
		conns      []net.Conn
		acceptDone = make(chan struct{})
	)
	go func() {
		defer close(acceptDone)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.accepted.Add(1)
			g.open.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer g.open.Add(-1)
				defer c.Close()
				if g.answer >= 0 {
					br := bufio.NewReader(c)
					for {
						line, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if line == "\r\n" {
							break
						}
					}
					timer := time.NewTimer(g.answer)
					<-timer.C // bounded by the delay; a write to a closed peer just fails
					io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
					io.Copy(io.Discard, br)
					return
				}
				io.Copy(io.Discard, c) // until the proxy closes its side
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-acceptDone
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return g
}

// Open is the number of accepted connections the peer has not closed.
func (g *silentGateway) Open() int64 { return g.open.Load() }
