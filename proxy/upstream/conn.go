package upstream

import (
	"bufio"
	"net"
	"syscall"
	"time"
)

// upConn is one upstream connection with its buffers.
type upConn struct {
	conn  net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	key   poolKey
	since time.Time // idle since
	dw    *deadlineWriter
	rc    syscall.RawConn // for quiet; set on its first use
	peek  sockPeek
	// interrupt ends any read or write on conn at once (a past
	// deadline): an exchange's context.AfterFunc, made once per
	// connection instead of a closure per request.
	interrupt func()
	// headDeadline is the read deadline left armed on conn after a
	// response whose body was already buffered (bodyBuffered); zero: none.
	headDeadline time.Time
}

// newUpConn wraps a fresh connection; writes extend a write deadline of
// writeIdle (a peer that stops reading our request fails instead of
// hanging, SPEC HTTP-4).
func newUpConn(conn net.Conn, key poolKey, writeIdle time.Duration) *upConn {
	uc := &upConn{conn: conn, key: key}
	uc.interrupt = func() { conn.SetDeadline(time.Unix(1, 0)) }
	uc.br = bufio.NewReaderSize(conn, 4096)
	uc.dw = &deadlineWriter{c: conn, idle: writeIdle}
	uc.bw = bufio.NewWriterSize(uc.dw, 4096)
	return uc
}

// maxResponseHead bounds a response head with its interim answers
// (bytes), like net/http's Transport (10 MB there; agents' answers have
// small heads).
const maxResponseHead = 1 << 20

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
