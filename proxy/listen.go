package proxy

import (
	"fmt"
	"net"
	"runtime"
	"slices"
	"strconv"

	"github.com/dual-proxy/dual-proxy/internal/netutil"
)

// Listen binds host:port for TCP; when the port is in use it tries
// port+1 … port+fallback in turn (SPEC LIS-1), skipping the ports in avoid
// (those of loopback gateways that are down right now: taking one would
// lock the real gateway out and drop it as a self-loop, GW-2). It returns
// the listener and the port actually bound. When every port is busy the
// error names the host OS's command that shows the holder (holderHint) and
// TIME-WAIT.
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
		if !netutil.IsAddrInUse(err) {
			return nil, 0, fmt.Errorf("listen on %s: %w", net.JoinHostPort(host, strconv.Itoa(p)), err)
		}
	}
	return nil, 0, fmt.Errorf("listen on %s ports %d-%d: all in use (%v); see which process holds them with `%s` (sockets in TIME-WAIT free themselves within a minute)",
		host, port, port+fallback, lastErr, holderHint(runtime.GOOS, port))
}

// holderHint is the command that shows which process holds TCP port on goos
// (a runtime.GOOS value): ss on Linux, lsof on macOS, netstat on Windows.
func holderHint(goos string, port int) string {
	switch goos {
	case "windows":
		return fmt.Sprintf("netstat -ano | findstr :%d", port)
	case "darwin":
		return fmt.Sprintf("lsof -nP -iTCP:%d", port)
	}
	return fmt.Sprintf("ss -tanp | grep :%d", port)
}
