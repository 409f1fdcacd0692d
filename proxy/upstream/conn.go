package upstream

import (
	"bufio"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
)

// upConn is one upstream connection with its buffers.
type upConn struct {
	conn  net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	key   poolKey
	since time.Duration // idle since (monoNow)
	dw    *deadlineWriter
	src   connReader      // br's source
	rc    syscall.RawConn // for send's wait (await_unix.go); set on its first use
	aw    await           // send's state, per OS
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
// hanging).
func newUpConn(conn net.Conn, key poolKey, writeIdle time.Duration) *upConn {
	uc := &upConn{conn: conn, key: key}
	uc.interrupt = func() { conn.SetDeadline(time.Unix(1, 0)) }
	uc.src.conn = netutil.RawIO(conn) // no sysmon wake per read or write
	uc.br = bufio.NewReaderSize(&uc.src, 4096)
	uc.dw = &deadlineWriter{c: conn, w: uc.src.conn, idle: writeIdle}
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
	w       io.Writer // c's writes (netutil.RawIO)
	idle    time.Duration
	written int64
	// armed: the caller has just set a write deadline of idle from now
	// (send, with the head's); the next write keeps it.
	armed bool
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	if w.armed {
		w.armed = false
	} else {
		w.c.SetWriteDeadline(time.Now().Add(w.idle))
	}
	n, err := w.w.Write(p)
	w.written += int64(n)
	return n, err
}

// connReader is the source of an upConn's buffered reader: the connection
// (its netutil.RawIO), except inside send's wait on Unix, where raw is set and a read is one
// read(2) on the descriptor (the poller's read lock is held there, so
// conn.Read would deadlock). err is a failure of that wait, returned to
// the next read (readFinal's), as a failed conn.Read would have been.
// got counts the bytes received (closedUnanswered: did any answer byte
// arrive).
type connReader struct {
	conn io.ReadWriter
	raw  bool
	fd   uintptr
	err  error
	got  int64
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.err != nil {
		err := r.err
		r.err = nil
		return 0, err
	}
	var n int
	var err error
	if r.raw {
		n, err = rawRead(r.fd, p)
	} else {
		n, err = r.conn.Read(p)
	}
	r.got += int64(n)
	return n, err
}
