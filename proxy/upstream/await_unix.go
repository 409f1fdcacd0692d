//go:build unix

package upstream

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// await is send's state for one request, kept with the connection so
// that the RawConn.Read callback (step, made once per connection) and
// its inputs allocate nothing per request.
type await struct {
	step  func(fd uintptr) bool // uc.step as a method value
	c     *Client
	cand  candidate.Candidate
	r     *Request
	body  io.Reader
	check bool // a reused connection: anything before the request drops it
	wrote bool // writeRequest ran
	quiet bool
	werr  error
}

// send writes r on uc and waits for the first bytes of its answer, in one
// RawConn.Read: the read(2) that finds the socket empty before
// the write is the check that nothing arrived while a reused connection
// sat idle (bytes or EOF then, and quiet is false: nothing was
// written, the connection is closed by the caller), and after the write
// the wait for the answer needs no read(2) that finds nothing, as a new
// conn.Read would make: the poller's readiness edge of the answer cannot
// be lost in between, since no read of ours resets it. A peek, the write,
// a read that finds nothing and the read of the answer were four system
// calls; these are three. The answer's first bytes are then in uc.br, or
// the failure of the wait is returned by its next read (connReader.err).
// werr is the write's failure (the wait is skipped then). A connection
// that is no socket (TLS to an https gateway) takes sendPlain.
func (uc *upConn) send(c *Client, check bool, cand candidate.Candidate, r *Request, body io.Reader) (quiet bool, werr error) {
	if uc.rc == nil {
		sc, ok := uc.conn.(syscall.Conn)
		if !ok {
			return uc.sendPlain(c, check, cand, r, body)
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			return false, err
		}
		uc.rc = rc
		uc.aw.step = uc.step
	}
	if check && uc.br.Buffered() > 0 {
		return false, nil
	}
	// The wait below is bounded by this deadline; a request with a body
	// gets a fresh one once it is written (the response timeout counts
	// from the end of the request).
	uc.headDeadline = c.headDeadline(r)
	if r.ResponseTimeout == 0 && c.ResponseTimeout == uc.dw.idle && !uc.headDeadline.IsZero() {
		// The request's first write is bounded by the same instant: one
		// deadline change (one runtime timer) and no clock read in
		// deadlineWriter for it.
		uc.conn.SetDeadline(uc.headDeadline)
		uc.dw.armed = true
	} else {
		uc.conn.SetReadDeadline(uc.headDeadline)
	}
	a := &uc.aw
	a.c, a.cand, a.r, a.body, a.check = c, cand, r, body, check
	a.wrote, a.quiet, a.werr = false, true, nil
	err := uc.rc.Read(a.step)
	uc.src.raw, uc.dw.armed = false, false
	quiet, werr = a.quiet, a.werr
	a.c, a.cand, a.r, a.body, a.werr = nil, candidate.Candidate{}, nil, nil, nil
	if err != nil {
		if !a.wrote {
			// Closed, or interrupted (its context ended) before the
			// request: nothing was written.
			return !check, err
		}
		uc.src.err = err // the wait's failure (a timeout): readFinal's
	}
	return quiet, werr
}

// step is send's RawConn.Read callback: first the read before the
// request and the write, then the read of the answer (false: nothing yet,
// wait for readability).
func (uc *upConn) step(fd uintptr) bool {
	a := &uc.aw
	uc.src.fd, uc.src.raw = fd, true
	_, err := uc.br.Peek(1)
	if err == errWouldBlock {
		if !a.wrote {
			return !uc.write()
		}
		return false
	}
	if err != nil {
		uc.src.err = err // EOF or a failure, for readFinal (or the check)
	}
	if !a.wrote {
		if a.check {
			a.quiet = false // bytes or EOF while idle: never answer this request
			return true
		}
		// A fresh connection on which the origin spoke first: write the
		// request and let readFinal judge what came, as it always did.
		uc.write()
	}
	return true
}

// write writes the request from within step and reports whether the
// answer is to be waited for.
func (uc *upConn) write() bool {
	a := &uc.aw
	a.wrote = true
	uc.src.raw = false
	a.werr = writeRequest(uc.bw, a.cand, a.r, a.body)
	if a.werr != nil {
		return false
	}
	if a.body != nil && a.r.Length != 0 {
		uc.headDeadline = a.c.headDeadline(a.r)
		uc.conn.SetReadDeadline(uc.headDeadline)
	}
	return true
}

// quiet reports, for a connection that is no socket, whether nothing is
// buffered (what can be seen without a socket peek).
func (uc *upConn) quiet() bool { return uc.br.Buffered() == 0 }

// errWouldBlock is rawRead finding nothing to read.
var errWouldBlock = errors.New("no data yet")

// rawRead is one read(2) on fd that never waits, with net.Conn's results:
// io.EOF at the peer's FIN, errWouldBlock when nothing is there yet. It
// is netutil.ReadFD: on Linux no runtime system-call bookkeeping, whose
// first call after a wait woke the runtime's sysmon thread.
func rawRead(fd uintptr, p []byte) (int, error) {
	for {
		n, errno := netutil.ReadFD(fd, p)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN || errno == syscall.EWOULDBLOCK:
			return 0, errWouldBlock
		case errno != 0:
			return 0, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", errno)}
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
