package proxy

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"syscall"
)

// Listen binds host:port for TCP; when the port is in use it tries
// port+1 … port+fallback in turn (SPEC LIS-1), skipping the ports in avoid
// (those of loopback gateways that are down right now: taking one would
// lock the real gateway out and drop it as a self-loop, GW-2). It returns
// the listener and the port actually bound. When every port is busy the
// error names `ss -tan` and TIME-WAIT, so the user can find the holder.
func Listen(host string, port, fallback int, avoid ...int) (net.Listener, int, error) {
	if port < 0 || port > 65535 || fallback < 0 {
		return nil, 0, fmt.Errorf("listen: bad port %d or fallback %d", port, fallback)
	}
	var lastErr error
	for p := port; p <= port+fallback && p <= 65535; p++ {
		if p != port && slices.Contains(avoid, p) {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err == nil {
			return ln, ln.Addr().(*net.TCPAddr).Port, nil
		}
		lastErr = err
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, 0, fmt.Errorf("listen on %s: %w", net.JoinHostPort(host, strconv.Itoa(p)), err)
		}
	}
	return nil, 0, fmt.Errorf("listen on %s ports %d-%d: all in use (%v); see which process holds them with `ss -tanp | grep :%d` (sockets in TIME-WAIT free themselves within a minute)",
		host, port, port+fallback, lastErr, port)
}
