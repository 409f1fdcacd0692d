package proxy

// Hand-off of origin-form requests (SPEC HTTP-1, HTTP-5b): the proxy's own
// endpoints are served by net/http on a handoffConn per client connection
// (handoff_conn.go), handed over through chanListener and fed one request
// at a time; the connection goes back to the proxy's loop after each
// answer.

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dual-proxy/dual-proxy/internal/httpmsg"
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

// selfTarget reports whether head is an absolute-form http:// request for
// this server's own listener (its bound address and port, namesListener);
// if so it rewrites head.Raw's request line to origin-form. Any other
// address on the same port, another loopback address included, is an
// origin like any other (SPEC HTTP-1).
func (s *Server) selfTarget(head *httpmsg.RequestHead) bool {
	if !s.listensOn(targetPort(head.Target)) {
		return false // the common case, decided without parsing the URL
	}
	u, err := url.Parse(head.Target)
	if err != nil || !strings.EqualFold(u.Scheme, "http") || u.Host == "" {
		return false
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return false
	}
	host := strings.Trim(u.Hostname(), "[]")
	var bound []*net.TCPAddr
	s.mu.Lock()
	for ln := range s.listeners {
		if a, ok := ln.Addr().(*net.TCPAddr); ok && a.Port == port {
			bound = append(bound, a)
		}
	}
	s.mu.Unlock()
	if !slices.ContainsFunc(bound, func(a *net.TCPAddr) bool { return namesListener(host, a.IP) }) {
		return false
	}
	path := u.RequestURI()
	eol := bytes.IndexByte(head.Raw, '\n')
	line := head.Method + " " + path + " " + head.Proto + "\r\n"
	head.Raw = append([]byte(line), head.Raw[eol+1:]...)
	head.Target = path
	return true
}

// targetPort is the explicit port of an absolute-form target's authority
// ("http://h:8080/x" → 8080), or 0 when it has none or it is not a number;
// selfTarget's first, parse-free filter.
func targetPort(raw string) int {
	i := strings.Index(raw, "://")
	if i < 0 {
		return 0
	}
	auth := raw[i+3:]
	for j := 0; j < len(auth); j++ {
		if c := auth[j]; c == '/' || c == '?' || c == '#' {
			auth = auth[:j] // a loop: IndexAny builds a byte set per call
			break
		}
	}
	j := strings.LastIndexByte(auth, ':')
	if j < 0 || strings.IndexByte(auth[j:], ']') >= 0 {
		return 0 // no port, or the last colon is inside an IPv6 literal
	}
	port, err := strconv.Atoi(auth[j+1:])
	if err != nil || port <= 0 {
		return 0
	}
	return port
}

// listensOn reports whether one of the server's TCP listeners has port:
// a read of the ports snapshot, no lock (every absolute-form
// request asks, and took the server's lock for it).
func (s *Server) listensOn(port int) bool {
	if port == 0 {
		return false
	}
	if p := s.ports.Load(); p != nil {
		return slices.Contains(*p, port)
	}
	return false
}

// addListenPort adds ln's port to the snapshot listensOn reads; s.mu is
// held (Serve). Listeners are never removed: a closed one serves nothing
// and its port being "ours" only sends a request for it to net/http.
func (s *Server) addListenPort(ln net.Listener) {
	a, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return
	}
	var ports []int
	if p := s.ports.Load(); p != nil {
		ports = slices.Clone(*p)
	}
	ports = append(ports, a.Port)
	s.ports.Store(&ports)
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
