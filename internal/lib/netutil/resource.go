package netutil

import (
	"errors"
	"syscall"
)

// IsLocalResource reports whether err is this machine running out of a
// resource while opening or using a socket: file descriptors (EMFILE,
// ENFILE), socket buffers (ENOBUFS) or memory (ENOMEM); on Windows the
// winsock and system equivalents. Such a failure says nothing about the
// gateway or origin being dialled, so the proxy never counts it against a
// candidate (a gateway cooled for every host on EMFILE).
func IsLocalResource(err error) bool { return hasErrno(err, localResourceErrnos) }

// IsReset reports whether err is the peer resetting the connection:
// ECONNRESET; on Windows winsock's WSAECONNRESET and WSAECONNABORTED and the
// overlapped-I/O ERROR_NETNAME_DELETED, which syscall.ECONNRESET does not match
// there (Go's Windows ECONNRESET is an invented code no socket call returns).
func IsReset(err error) bool { return hasErrno(err, resetErrnos) }

// IsAddrInUse reports whether err is a bind failing because another socket
// holds the address: EADDRINUSE; on Windows WSAEADDRINUSE (SPEC LIS-1: the
// next port is tried only on this error).
func IsAddrInUse(err error) bool { return hasErrno(err, addrInUseErrnos) }

// hasErrno reports whether err wraps a syscall.Errno that is one of list.
func hasErrno(err error, list []syscall.Errno) bool {
	if err == nil {
		return false
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	for _, e := range list {
		if errno == e {
			return true
		}
	}
	return false
}
