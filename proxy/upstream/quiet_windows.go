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
// retried once on a fresh connection (errStaleConn).
func socketQuiet(rc syscall.RawConn, _ *sockPeek) bool {
	var avail, ret uint32
	var ierr error
	cerr := rc.Control(func(fd uintptr) {
		ierr = windows.WSAIoctl(windows.Handle(fd), fionread, nil, 0,
			(*byte)(unsafe.Pointer(&avail)), uint32(unsafe.Sizeof(avail)), &ret, nil, 0)
	})
	return cerr == nil && ierr == nil && avail == 0
}

// peekFD is unused: FIONREAD runs through RawConn.Control.
func (p *sockPeek) peekFD(uintptr) bool { return true }
