package testworld

import (
	"bufio"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// SilentGateway is a gateway that accepts TCP and never answers (a
// dead-but-silent gateway, the case racing exists for): it reads until the
// peer closes and counts the connections still open, so a test can prove
// that the proxy closed the attempts that lost. Built by
// NewAnsweringGateway it answers every CONNECT head with 200 after a delay
// instead, and relays nothing. Unlike Blackhole it reads, so it sees the
// peer's close.
type SilentGateway struct {
	// Addr is the listener's "127.0.0.1:PORT".
	Addr string

	open     atomic.Int64
	accepted atomic.Int64
	answer   time.Duration // < 0: never
}

// NewSilentGateway starts a SilentGateway that never answers. The listener
// and every accepted connection are closed by t.Cleanup, which waits for
// the gateway's goroutines (testkit.ServeConns).
func NewSilentGateway(t testing.TB) *SilentGateway { return newSilentGateway(t, -1) }

// NewAnsweringGateway starts a SilentGateway that answers each CONNECT
// head with "200 Connection established" after d, then discards what it
// reads until the peer closes.
func NewAnsweringGateway(t testing.TB, d time.Duration) *SilentGateway {
	return newSilentGateway(t, d)
}

func newSilentGateway(t testing.TB, answer time.Duration) *SilentGateway {
	t.Helper()
	g := &SilentGateway{answer: answer}
	g.Addr = testkit.ServeConns(t, g.serve)
	return g
}

// serve reads c until the peer closes it, answering a CONNECT head first
// when the gateway answers.
func (g *SilentGateway) serve(c net.Conn) {
	g.open.Add(1) // first: a connection Accepted counts is open until it ends
	g.accepted.Add(1)
	defer g.open.Add(-1)
	defer c.Close()
	if g.answer < 0 {
		io.Copy(io.Discard, c) // until the proxy closes its side
		return
	}
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
}

// Open is the number of accepted connections the peer has not closed.
func (g *SilentGateway) Open() int64 { return g.open.Load() }

// Accepted is the number of connections accepted so far.
func (g *SilentGateway) Accepted() int64 { return g.accepted.Load() }
