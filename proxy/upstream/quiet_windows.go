package upstream

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// fionread is winsock's FIONREAD (_IOR('f', 127, u_long)): the number of
// bytes waiting in a socket's receive buffer.
const fionread = 0x4004667f

// socketQuiet asks FIONREAD how many bytes wait: Windows has no
// non-blocking MSG_PEEK on an overlapped socket. Unsolicited data is
// caught, but a peer's FIN (EOF) is not visible this way; such a
// connection fails on its first write or read and, being pooled, is
// retried once on a fresh connection (errStaleConn). The ioctl runs in
// RawConn.Read's callback (which returns at once when it reports true), as
// on Unix, so the check allocates nothing (a RawConn.Control closure over
// local results escaped: 3 allocations per reuse).
func socketQuiet(rc syscall.RawConn, p *sockPeek) bool {
	p.quiet = false
	return rc.Read(p.check) == nil && p.quiet
}

// peekFD is the RawConn.Read callback; it never waits.
func (p *sockPeek) peekFD(fd uintptr) bool {
	err := windows.WSAIoctl(windows.Handle(fd), fionread, nil, 0,
		(*byte)(unsafe.Pointer(&p.n[0])), uint32(unsafe.Sizeof(p.n[0])), &p.n[1], nil, 0)
	p.quiet = err == nil && p.n[0] == 0
	return true
}
