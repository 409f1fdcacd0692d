//go:build unix

package testworld

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// holdRefusedPort binds a TCP socket to 127.0.0.1:0 without listening on
// it and keeps it until t's cleanup: connections to that port are refused
// (no listening socket answers them), and the port cannot be handed to
// another listener while the test runs.
func holdRefusedPort(t testing.TB) (string, bool) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return "", false
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		return "", false
	}
	sa, err := syscall.Getsockname(fd)
	in4, ok := sa.(*syscall.SockaddrInet4)
	if err != nil || !ok {
		syscall.Close(fd)
		return "", false
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in4.Port)), true
}
