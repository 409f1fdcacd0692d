package proxy

import (
	"net"
	"strconv"
	"sync"
)

// chanListener is a net.Listener fed by deliver: the proxy hands it
// origin-form connections so net/http serves the proxy's own endpoints.
type chanListener struct {
	ch     chan net.Conn
	mu     sync.Mutex
	closed bool
	done   chan struct{}
}

func newChanListener() *chanListener {
	return &chanListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

// deliver passes c to Accept; it reports false if the listener is closed.
func (l *chanListener) deliver(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	return nil
}

func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func itoa(n int) string { return strconv.Itoa(n) }
