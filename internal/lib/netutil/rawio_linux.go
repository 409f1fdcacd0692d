package netutil

import (
	"syscall"
	"unsafe"
)

// rawSyscalls: RawIO makes its own read(2) and write(2) (rawio.go).
const rawSyscalls = true

// sysRead is read(2) on fd without the runtime's system-call bookkeeping:
// fd is non-blocking, so the call never blocks.
func sysRead(fd uintptr, p []byte) (int, syscall.Errno) {
	var b unsafe.Pointer
	if len(p) > 0 {
		b = unsafe.Pointer(&p[0])
	}
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(b), uintptr(len(p)))
	return int(n), errno
}

// sysWrite is write(2) on fd, as sysRead; p is not empty.
func sysWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), errno
}

// ReadFD is one read(2) on the non-blocking descriptor fd, inside a
// syscall.RawConn callback: n bytes, or the errno (EAGAIN: nothing yet).
// A zero n without errno is the peer's FIN when p is not empty.
func ReadFD(fd uintptr, p []byte) (int, syscall.Errno) { return sysRead(fd, p) }

// WriteFD is one write(2) of p (not empty) on the non-blocking descriptor
// fd, inside a syscall.RawConn callback: n bytes, or the errno (EAGAIN: the
// send buffer is full). Linux only: the tunnel copy (proxy).
func WriteFD(fd uintptr, p []byte) (int, syscall.Errno) { return sysWrite(fd, p) }
