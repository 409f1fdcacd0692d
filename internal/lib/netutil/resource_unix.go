//go:build unix

package netutil

import "syscall"

// The errnos of IsLocalResource, IsReset and IsAddrInUse.
var (
	localResourceErrnos = []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM}
	resetErrnos         = []syscall.Errno{syscall.ECONNRESET}
	addrInUseErrnos     = []syscall.Errno{syscall.EADDRINUSE}
)
