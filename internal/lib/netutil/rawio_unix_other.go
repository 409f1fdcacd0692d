//go:build unix && !linux

package netutil

import "syscall"

// ReadFD is one read(2) on the non-blocking descriptor fd, inside a
// syscall.RawConn callback: n bytes, or the errno (EAGAIN: nothing yet).
// A zero n without errno is the peer's FIN when p is not empty.
func ReadFD(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	if err != nil {
		return 0, err.(syscall.Errno)
	}
	return n, 0
}
