//go:build unix && !linux

package upstream

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// socketQuiet peeks at the socket without blocking (MSG_PEEK|MSG_DONTWAIT):
// quiet only when the peek would block, so unsolicited bytes and a peer's
// FIN (EOF) are both seen.
func socketQuiet(rc syscall.RawConn, p *sockPeek) bool {
	p.quiet = false
	return rc.Read(p.check) == nil && p.quiet
}

// peekFD is the RawConn.Read callback; it never waits.
func (p *sockPeek) peekFD(fd uintptr) bool {
	n, _, err := unix.Recvfrom(int(fd), p.b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	p.quiet = n < 0 && (err == unix.EAGAIN || err == unix.EWOULDBLOCK)
	return true
}
