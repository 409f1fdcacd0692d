//go:build unix

package upstream

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// quiet reports whether an idle connection has nothing to read: no
// buffered bytes, no unsolicited data and no EOF waiting in the socket (a
// peek that never blocks). Anything else would be read as the answer to
// the next request (response desync), so such a connection is dropped.
func (uc *upConn) quiet() bool {
	if uc.br.Buffered() > 0 {
		return false
	}
	sc, ok := uc.conn.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	quiet := false
	var b [1]byte
	rerr := rc.Read(func(fd uintptr) bool {
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		quiet = n < 0 && (err == unix.EAGAIN || err == unix.EWOULDBLOCK)
		return true // never wait
	})
	return rerr == nil && quiet
}
