package proxy

import (
	"io"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// copyTunnel copies src to dst until EOF (nil error) or an error, like
// io.Copy, but holds no splice pipe while src is silent (issue 20: io.Copy
// between two *net.TCPConn keeps a pipe pair per direction while it waits,
// 6 fds per idle tunnel instead of 2). It waits for readability through
// the runtime netpoller (syscall.RawConn.Read with a callback that reports
// not-ready until bytes or EOF are there), then splices exactly the bytes
// the socket holds (SIOCINQ), so splice(2) never waits with a pipe taken
// from Go's pipe pool. Other connection types fall back to io.Copy. The
// read deadline of src applies to the wait.
func copyTunnel(dst, src net.Conn) (int64, error) {
	s, ok := src.(*net.TCPConn)
	d, ok2 := dst.(*net.TCPConn)
	if !ok || !ok2 {
		return io.Copy(dst, src)
	}
	rc, err := s.SyscallConn()
	if err != nil {
		return io.Copy(dst, src)
	}
	var (
		w       readiness
		written int64
		lr      = &io.LimitedReader{R: s}
	)
	ready := w.check // one method value per tunnel direction, not per wait
	for {
		w.avail, w.eof, w.err = 0, false, nil
		if err := rc.Read(ready); err != nil {
			return written, err
		}
		switch {
		case w.err != nil:
			return written, w.err
		case w.eof:
			return written, nil
		}
		lr.N = int64(w.avail)
		n, err := d.ReadFrom(lr) // splice(2) of bytes already queued
		written += n
		if err != nil {
			return written, err
		}
	}
}

// readiness is the outcome of one netpoller wait of copyTunnel.
type readiness struct {
	avail int   // bytes queued in the receive buffer (> 0 unless eof or err)
	eof   bool  // the peer sent FIN and nothing is queued
	err   error // the socket reported an error (e.g. ECONNRESET)
	peek  [1]byte
}

// check is the syscall.RawConn.Read callback: true once bytes, EOF or an
// error are there; false makes the runtime wait for readability.
func (r *readiness) check(fd uintptr) bool {
	for {
		if n, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ); err == nil && n > 0 {
			r.avail = n
			return true
		}
		// recvfrom(2) without a source address: unix.Recvfrom would
		// allocate one per wait.
		n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&r.peek[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return false
		case errno != 0:
			r.err = errno
		case n == 0:
			r.eof = true
		default:
			r.avail = int(n)
		}
		return true
	}
}
