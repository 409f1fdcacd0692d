package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
)

// Listen binds host:port for TCP; when the port is in use it tries
// port+1 … port+fallback in turn (SPEC LIS-1), skipping the ports in avoid
// (those of loopback gateways that are down right now: taking one would
// lock the real gateway out and drop it as a self-loop). It returns
// the listener and the port actually bound. When every port is busy the
// error names the host OS's command that shows the holder (holderHint) and
// TIME-WAIT. On a loopback host accepted connections get no TCP
// keepalive (loopbackKeepAlive).
func Listen(host string, port, fallback int, avoid ...int) (net.Listener, int, error) {
	return listenOn(runtime.GOOS, host, port, fallback, avoid)
}

// listenOn is Listen with the OS's bind rules of goos (a runtime.GOOS value), so that a test
// on Linux runs macOS's probe.
func listenOn(goos, host string, port, fallback int, avoid []int) (net.Listener, int, error) {
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
		addr := net.JoinHostPort(host, strconv.Itoa(p))
		if probeBeforeBind(goos, host) && answers(addr) {
			lastErr = fmt.Errorf("%s: %w", addr, errShadowed)
			continue
		}
		ln, err := lc.Listen(context.Background(), "tcp", addr)
		if err == nil {
			return ln, ln.Addr().(*net.TCPAddr).Port, nil
		}
		lastErr = err
		if !netutil.IsAddrInUse(err) {
			return nil, 0, fmt.Errorf("listen on %s: %w", net.JoinHostPort(host, strconv.Itoa(p)), err)
		}
	}
	return nil, 0, fmt.Errorf("listen on %s ports %d-%d: all in use (%w); see which process holds them with `%s` (sockets in TIME-WAIT free themselves within a minute)",
		host, port, port+fallback, lastErr, holderHint(goos, port))
}

// errShadowed is the busy-port error of a port that another process serves on the wildcard
// address, where binding the specific address would succeed anyway (probeBeforeBind).
var errShadowed = errors.New("address in use: another process accepts connections on this port (a wildcard listener)")

// probeBeforeBind reports whether Listen must connect to host's port before binding it on goos
// (SPEC PLAT-6). Under BSD rules (macOS, the BSDs) with SO_REUSEADDR, which Go sets on every
// listener, a bind to 127.0.0.1:P succeeds while another process holds *:P, and the more specific
// listener then takes that process's loopback clients: port fallback would not trigger. Linux
// and Windows refuse that bind (EADDRINUSE, WSAEADDRINUSE), so they need no probe; nor does a
// wildcard host, whose bind conflicts everywhere.
func probeBeforeBind(goos, host string) bool {
	switch goos {
	case "darwin", "ios", "freebsd", "netbsd", "openbsd", "dragonfly":
	default:
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && !a.IsUnspecified()
}

// answers reports whether something accepts a TCP connection at addr within 1 s (a refused or
// unanswered connect: no).
func answers(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
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
