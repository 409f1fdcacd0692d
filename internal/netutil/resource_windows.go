package netutil

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// localResourceErrnos are the errnos of IsLocalResource: winsock's
// descriptor and buffer exhaustion and the system's out-of-memory codes.
var localResourceErrnos = []syscall.Errno{windows.WSAEMFILE, windows.WSAENOBUFS,
	windows.ERROR_NOT_ENOUGH_MEMORY, windows.ERROR_OUTOFMEMORY, syscall.EMFILE, syscall.ENFILE}
