package upstream

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// fionread is winsock's FIONREAD (_IOR('f', 127, u_long)): the number of
// bytes waiting in a socket's receive buffer.
const fionread = 0x4004667f

// WSAPoll's event bits (winsock2.h).
const (
	pollErr    = 0x0001
	pollHup    = 0x0002
	pollRdNorm = 0x0100
)

// procWSAPoll is ws2_32's WSAPoll (Windows Vista and later), which x/sys/windows does not wrap.
var procWSAPoll = windows.NewLazySystemDLL("ws2_32.dll").NewProc("WSAPoll")

// wsaPollFD is winsock's WSAPOLLFD.
type wsaPollFD struct {
	fd      uintptr
	events  int16
	revents int16
}

// socketQuiet asks FIONREAD how many bytes wait (Windows has no
// non-blocking MSG_PEEK on an overlapped socket) and WSAPoll, with no
// wait, whether the socket is readable: readable with nothing to read is
// the peer's FIN (EOF) or a reset, so an idle connection the origin closed
// is dropped before a request is written to it (before, Windows saw
// only unsolicited bytes, and a POST on such a connection failed instead of
// going on a fresh one). The calls run in RawConn.Read's callback (which
// returns at once when it reports true), as on Unix, so the check allocates
// nothing.
func socketQuiet(rc syscall.RawConn, p *sockPeek) bool {
	p.quiet = false
	return rc.Read(p.check) == nil && p.quiet
}

// peekFD is the RawConn.Read callback; it never waits.
func (p *sockPeek) peekFD(fd uintptr) bool {
	err := windows.WSAIoctl(windows.Handle(fd), fionread, nil, 0,
		(*byte)(unsafe.Pointer(&p.n[0])), uint32(unsafe.Sizeof(p.n[0])), &p.n[1], nil, 0)
	p.quiet = err == nil && p.n[0] == 0
	if p.quiet {
		pfd := wsaPollFD{fd: fd, events: pollRdNorm}
		r, _, _ := syscall.SyscallN(procWSAPoll.Addr(), uintptr(unsafe.Pointer(&pfd)), 1, 0)
		// r: the number of ready sockets, 0 when none is, SOCKET_ERROR (^0) on failure.
		p.quiet = r == 0 || (r == 1 && pfd.revents&(pollErr|pollHup|pollRdNorm) == 0)
	}
	return true
}
