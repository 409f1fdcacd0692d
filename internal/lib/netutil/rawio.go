package netutil

import (
	"io"
	"net"
	"os"
	"syscall"
)

// Raw I/O on a TCP connection (c=1 latency). Go's net.Conn
// reads and writes through syscall.Read and syscall.Write, which enter the
// runtime's blocking-system-call path (entersyscall). That path wakes the
// runtime's monitor thread (sysmon) out of its deep sleep whenever it
// sleeps, and it sleeps whenever every P was idle for about 20 µs: so at
// one request at a time, the first read or write after each wait woke a
// second thread with a futex, usually on the other, halted CPU (measured
// through the proxy at c=1: 0.4-0.8 futex calls and 0.4-0.7 nanosleeps per
// request, 10-18 µs of CPU per request). The sockets are non-blocking (the
// runtime's poller owns them), so a read or write never blocks and needs
// none of that bookkeeping; RawIO makes the same read(2) and write(2) as
// plain system calls and waits for readiness in the poller through
// syscall.RawConn, so deadlines and Close act on it as on net.Conn.
// sysmon then sleeps on while such calls run, as it does while the
// process is idle; any other system call (a tunnel's splice, a log write,
// net/http's reads) or its next timer wakes it for its duties.
//
// Per OS: on Linux the calls are syscall.RawSyscall; elsewhere RawIO is
// the connection itself (darwin's system calls go through libc, Windows
// has no read(2) on sockets).

// RawIO returns c's reads and writes as raw system calls when c is a
// *net.TCPConn on Linux, else c itself. Reads and writes may run
// concurrently with each other (one reader and one writer at a time, as
// net.Conn's poller locks serialize them); errors are net.Conn's: io.EOF
// at the peer's FIN, a *net.OpError otherwise (os.ErrDeadlineExceeded
// inside at a deadline, net.ErrClosed after Close).
func RawIO(c net.Conn) io.ReadWriter {
	tc, ok := c.(*net.TCPConn)
	if !ok || !rawSyscalls {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	r := &rawIO{c: tc, rc: rc}
	r.rd.step, r.wr.step = r.readStep, r.writeStep
	return r
}

// rawIO is RawIO's connection: one call's state per direction, so the
// RawConn callbacks are made once (no allocation per call).
type rawIO struct {
	c  *net.TCPConn
	rc syscall.RawConn
	rd rawCall
	wr rawCall
}

// rawCall is one direction's call in progress.
type rawCall struct {
	step func(fd uintptr) bool
	p    []byte
	n    int
	err  error
}

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil // as net.Conn: no system call
	}
	return r.rd.run(r.rc.Read, p)
}

func (r *rawIO) Write(p []byte) (int, error) {
	return r.wr.run(r.rc.Write, p)
}

// run makes one call through do (RawConn.Read or Write) with p.
func (k *rawCall) run(do func(func(uintptr) bool) error, p []byte) (int, error) {
	k.p, k.n, k.err = p, 0, nil
	err := do(k.step)
	n, kerr := k.n, k.err
	k.p, k.err = nil, nil
	if err != nil {
		return n, err // a deadline or Close, as RawConn reports it
	}
	return n, kerr
}

// readStep is the read's RawConn callback: false waits for readability.
func (r *rawIO) readStep(fd uintptr) bool {
	k := &r.rd
	for {
		n, errno := sysRead(fd, k.p)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN:
			return false
		case errno != 0:
			k.err = r.opError("read", errno)
		case n == 0:
			k.err = io.EOF
		default:
			k.n = n
		}
		return true
	}
}

// writeStep is the write's RawConn callback: it writes all of the call's
// bytes, waiting for writability (false) while the send buffer is full.
func (r *rawIO) writeStep(fd uintptr) bool {
	k := &r.wr
	for k.n < len(k.p) {
		n, errno := sysWrite(fd, k.p[k.n:])
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN:
			return false
		case errno != 0:
			k.err = r.opError("write", errno)
			return true
		}
		k.n += n
	}
	return true
}

func (r *rawIO) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Source: r.c.LocalAddr(), Addr: r.c.RemoteAddr(), Err: &os.SyscallError{Syscall: op, Err: errno}}
}
