package upstream

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"
	"time"
)

// upConn is one upstream connection with its buffers.
type upConn struct {
	conn  net.Conn
	lim   *headLimit // under br: bounds the response head
	br    *bufio.Reader
	bw    *bufio.Writer
	key   string
	since time.Time // idle since
	dw    *deadlineWriter
	rc    syscall.RawConn // for quiet; set on its first use
	peek  sockPeek
}

// newUpConn wraps a fresh connection; writes extend a write deadline of
// writeIdle (a peer that stops reading our request fails instead of
// hanging, SPEC HTTP-4).
func newUpConn(conn net.Conn, key string, writeIdle time.Duration) *upConn {
	uc := &upConn{conn: conn, key: key, lim: &headLimit{r: conn, n: -1}}
	uc.br = bufio.NewReaderSize(uc.lim, 4096)
	uc.dw = &deadlineWriter{c: conn, idle: writeIdle}
	uc.bw = bufio.NewWriterSize(uc.dw, 4096)
	return uc
}

// maxResponseHead bounds a response head (bytes), like net/http's
// Transport (10 MB there; agents' answers have small heads).
const maxResponseHead = 1 << 20

// errHeadTooLarge is a response head over maxResponseHead.
var errHeadTooLarge = errors.New("response head too large")

// headLimit limits reads to n bytes while n >= 0 (reading a head), and
// then keeps a copy of what it returned in rec: readFinal needs the head's
// raw Connection lines, which http.ReadResponse deletes when they hold
// "close".
type headLimit struct {
	r   io.Reader
	n   int64
	rec []byte
}

func (l *headLimit) Read(p []byte) (int, error) {
	if l.n < 0 {
		return l.r.Read(p)
	}
	if l.n == 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	l.rec = append(l.rec, p[:n]...)
	return n, err
}

// deadlineWriter sets a write deadline of idle before every write and
// counts the bytes the connection accepted (written: whether any byte of
// a request may have left, the reuse rule in client.go).
type deadlineWriter struct {
	c       net.Conn
	idle    time.Duration
	written int64
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.c.SetWriteDeadline(time.Now().Add(w.idle))
	n, err := w.c.Write(p)
	w.written += int64(n)
	return n, err
}
