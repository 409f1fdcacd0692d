package netutil

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// The errnos of IsLocalResource (winsock's descriptor and buffer exhaustion
// and the system's out-of-memory codes), IsReset and IsAddrInUse. Socket calls
// return winsock's WSAE… codes; syscall.ECONNRESET and EADDRINUSE are Go's
// invented Windows values and stay in the lists only for errors built by Go
// code itself.
var (
	localResourceErrnos = []syscall.Errno{windows.WSAEMFILE, windows.WSAENOBUFS,
		windows.ERROR_NOT_ENOUGH_MEMORY, windows.ERROR_OUTOFMEMORY, syscall.EMFILE, syscall.ENFILE}
	resetErrnos = []syscall.Errno{windows.WSAECONNRESET, windows.WSAECONNABORTED,
		windows.ERROR_NETNAME_DELETED, syscall.ECONNRESET}
	addrInUseErrnos = []syscall.Errno{windows.WSAEADDRINUSE, syscall.EADDRINUSE}
)
