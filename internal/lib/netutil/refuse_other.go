//go:build !unix && !windows

package netutil

import (
	"fmt"
	"net"
)

// reserveRefusingPort cannot hold the port here (no bind without listen in
// the net package): it finds a free port and releases it, the old way.
func reserveRefusingPort() (*RefusingPort, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("reserve port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return &RefusingPort{Port: port, close: func() error { return nil }}, nil
}
