//go:build windows

package netutil

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// reserveRefusingPort: a winsock TCP socket bound to 127.0.0.1:0 and never
// listening; without SO_REUSEADDR no other socket may bind the port, and a
// connection attempt is refused.
func reserveRefusingPort() (*RefusingPort, error) {
	s, err := windows.Socket(windows.AF_INET, windows.SOCK_STREAM, windows.IPPROTO_TCP)
	if err != nil {
		return nil, fmt.Errorf("reserve port: socket: %w", err)
	}
	if err := windows.Bind(s, &windows.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		windows.Closesocket(s)
		return nil, fmt.Errorf("reserve port: bind: %w", err)
	}
	sa, err := windows.Getsockname(s)
	if err != nil {
		windows.Closesocket(s)
		return nil, fmt.Errorf("reserve port: getsockname: %w", err)
	}
	in4, ok := sa.(*windows.SockaddrInet4)
	if !ok {
		windows.Closesocket(s)
		return nil, fmt.Errorf("reserve port: getsockname: not IPv4")
	}
	return &RefusingPort{Port: in4.Port, close: func() error { return windows.Closesocket(s) }}, nil
}
