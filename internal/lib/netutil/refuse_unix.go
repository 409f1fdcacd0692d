//go:build unix

package netutil

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// reserveRefusingPort: a TCP socket bound to 127.0.0.1:0, no SO_REUSEADDR
// (so no other socket may bind the port, nor may an outgoing connection
// pick it as its local port), no listen(2) (so a SYN is answered with RST).
func reserveRefusingPort() (*RefusingPort, error) {
	// SOCK_CLOEXEC is Linux-only: mark it close-on-exec under ForkLock, as
	// the net package does, so no child started meanwhile inherits it.
	syscall.ForkLock.RLock()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("reserve port: socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("reserve port: bind: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("reserve port: getsockname: %w", err)
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		unix.Close(fd)
		return nil, fmt.Errorf("reserve port: getsockname: not IPv4")
	}
	return &RefusingPort{Port: in4.Port, close: func() error { return unix.Close(fd) }}, nil
}
