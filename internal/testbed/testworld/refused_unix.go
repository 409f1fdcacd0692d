//go:build unix

package testworld

import (
	"net"
	"strconv"
	"syscall"
)

// holdRefusedPort binds a TCP socket to 127.0.0.1:0 without listening on
// it and keeps it until release: connections to that port are refused (no
// listening socket answers them), and the port cannot be handed to another
// listener meanwhile.
func holdRefusedPort() (addr string, release func(), ok bool) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return "", nil, false
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return "", nil, false
	}
	sa, err := syscall.Getsockname(fd)
	in4, ok := sa.(*syscall.SockaddrInet4)
	if err != nil || !ok {
		syscall.Close(fd)
		return "", nil, false
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port)), func() { syscall.Close(fd) }, true
}
