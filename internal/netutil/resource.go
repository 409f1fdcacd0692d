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
// candidate (issue 13: a gateway cooled for every host on EMFILE).
func IsLocalResource(err error) bool {
	if err == nil {
		return false
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	for _, e := range localResourceErrnos {
		if errno == e {
			return true
		}
	}
	return false
}
