//go:build unix

package netutil

import "syscall"

// localResourceErrnos are the errnos of IsLocalResource.
var localResourceErrnos = []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM}
