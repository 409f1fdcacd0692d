package proxy

// Hand-off of origin-form requests: the proxy's own
// endpoints are served by net/http on a handoffConn per client connection
// (handoff_conn.go), handed over through chanListener and fed one request
// at a time; the connection goes back to the proxy's loop after each
// answer.

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
)

// chanListener is a net.Listener fed by deliver: the proxy hands it views
// of client connections so net/http serves the proxy's own endpoints.
type chanListener struct {
	delivered atomic.Int64 // connections handed to Accept (tests)
	ch        chan net.Conn
	mu        sync.Mutex
	closed    bool
	done      chan struct{}
}

func newChanListener() *chanListener {
	return &chanListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

// deliver passes c to Accept; it reports false if the listener is closed.
func (l *chanListener) deliver(c net.Conn) bool {
	select {
	case l.ch <- c:
		l.delivered.Add(1)
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

// handOff serves one origin-form request with the internal http.Server
// on c's view (*view, made on the connection's first origin-form request
// and whenever net/http closed the last one; handoff_conn.go) and reports
// whether c can carry another request: net/http answered keep-alive and
// the request was read to its end (SPEC HTTP-5b). It returns once net/http
// is done with the request and br may be read again.
func (s *Server) handOff(c net.Conn, br *bufio.Reader, head *httpmsg.RequestHead, view **handoffConn) bool {
	if v := *view; v != nil && v.assign(head) {
		return v.finish()
	}
	v := newHandoffConn(c, br, &s.watches)
	v.assign(head)
	*view = v
	if !s.handoff.deliver(v) {
		return false // shutting down
	}
	return v.finish()
}

// rechunker reads a chunked body from the client and hands net/http the
// same body chunked again (the head it parses says chunked), so the view
// ends exactly at the body's end; the trailer section is consumed and not
// passed on (RFC 9110 §6.5.1 lets a recipient drop it).
type rechunker struct {
	br      *bufio.Reader
	cr      io.Reader
	buf     []byte
	pending []byte // framing and data not yet returned
	done    bool
}

func (r *rechunker) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.done {
			return 0, io.EOF
		}
		if r.buf == nil {
			r.buf = make([]byte, 4096+32)
		}
		n, err := r.cr.Read(r.buf[16 : 16+4096])
		if n > 0 {
			hdr := strconv.AppendInt(r.buf[:0:16], int64(n), 16)
			hdr = append(hdr, '\r', '\n')
			start := 16 - len(hdr)
			copy(r.buf[start:], hdr)
			r.pending = append(r.buf[start:16+n], '\r', '\n')
		}
		if err == io.EOF {
			if terr := skipTrailers(r.br); terr != nil {
				return 0, terr
			}
			r.done = true
			r.pending = append(r.pending, "0\r\n\r\n"...)
		} else if err != nil {
			return 0, err
		}
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}
