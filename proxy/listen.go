package proxy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/netutil"
)

// Listen binds host:port for TCP; when the port is in use it tries
// port+1 … port+fallback in turn (SPEC LIS-1), skipping the ports in avoid
// (those of loopback gateways that are down right now: taking one would
// lock the real gateway out and drop it as a self-loop, GW-2). It returns
// the listener and the port actually bound. When every port is busy the
// error names the host OS's command that shows the holder (holderHint) and
// TIME-WAIT. On a loopback host accepted connections get no TCP
// keepalive (loopbackKeepAlive).
func Listen(host string, port, fallback int, avoid ...int) (net.Listener, int, error) {
	if port < 0 || port > 65535 || fallback < 0 {
		return nil, 0, fmt.Errorf("listen: bad port %d or fallback %d", port, fallback)
	}
	lc := net.ListenConfig{KeepAlive: loopbackKeepAlive(host)}
	if lc.KeepAlive < 0 {
		// Loopback: Multipath TCP has one path here, and Go's default
		// (an MPTCP listener on Linux since Go 1.24) costs every start
		// a probe socket and a uname(2), then the MPTCP listener's own
		// setup. Clients on loopback got plain TCP anyway
		// (no client here asks for MPTCP).
		lc.SetMultipathTCP(false)
	}
	var lastErr error
	for p := port; p <= port+fallback && p <= 65535; p++ {
		if p != port && slices.Contains(avoid, p) {
			continue
		}
		ln, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err == nil {
			return ln, ln.Addr().(*net.TCPAddr).Port, nil
		}
		lastErr = err
		if !netutil.IsAddrInUse(err) {
			return nil, 0, fmt.Errorf("listen on %s: %w", net.JoinHostPort(host, strconv.Itoa(p)), err)
		}
	}
	return nil, 0, fmt.Errorf("listen on %s ports %d-%d: all in use (%w); see which process holds them with `%s` (sockets in TIME-WAIT free themselves within a minute)",
		host, port, port+fallback, lastErr, holderHint(runtime.GOOS, port))
}

// loopbackKeepAlive is the accepted connections' keepalive period for a
// listener on host: -1 (none) on a loopback address or "localhost", 0 (Go's
// default, 15 s probes) elsewhere. A loopback peer cannot vanish without
// its kernel closing the connection, so probes there detect nothing, and
// enabling them cost every client connection four setsockopt(2) calls
// (10 of a new tunnel's ≈ 60 syscalls were setsockopt).
func loopbackKeepAlive(host string) time.Duration {
	if strings.EqualFold(host, "localhost") {
		return -1
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsLoopback() {
		return -1
	}
	return 0
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
