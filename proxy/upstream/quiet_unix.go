//go:build unix

package upstream

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// socketQuiet peeks at the socket without blocking (MSG_PEEK|MSG_DONTWAIT):
// quiet only when the peek would block, so unsolicited bytes and a peer's
// FIN (EOF) are both seen.
func socketQuiet(rc syscall.RawConn) bool {
	quiet := false
	var b [1]byte
	rerr := rc.Read(func(fd uintptr) bool {
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		quiet = n < 0 && (err == unix.EAGAIN || err == unix.EWOULDBLOCK)
		return true // never wait
	})
	return rerr == nil && quiet
}
