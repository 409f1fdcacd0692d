package upstream

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// socketQuiet peeks at the socket without blocking (MSG_PEEK|MSG_DONTWAIT):
// quiet only when the peek would block, so unsolicited bytes and a peer's
// FIN (EOF) are both seen.
func socketQuiet(rc syscall.RawConn, p *sockPeek) bool {
	p.quiet = false
	return rc.Read(p.check) == nil && p.quiet
}

// peekFD is the RawConn.Read callback: one recvfrom(2) without a source
// address (unix.Recvfrom would allocate a sockaddr per call), never waiting.
func (p *sockPeek) peekFD(fd uintptr) bool {
	_, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p.b[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	p.quiet = errno == unix.EAGAIN || errno == unix.EWOULDBLOCK // a byte, EOF (0) or an error: not quiet
	return true
}
