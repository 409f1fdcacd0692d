package dial

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// keepAlive is what the kernel says about c's TCP keepalive: SO_KEEPALIVE,
// TCP_KEEPIDLE and TCP_KEEPINTVL (seconds), TCP_KEEPCNT.
type keepAlive struct{ on, idle, intvl, cnt int }

func keepAliveOf(t *testing.T, c net.Conn) keepAlive {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var k keepAlive
	var errs [4]error
	if err := rc.Control(func(fd uintptr) {
		k.on, errs[0] = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
		k.idle, errs[1] = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
		k.intvl, errs[2] = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL)
		k.cnt, errs[3] = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT)
	}); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return k
}

// acceptAll accepts on ln until it is closed, closing nothing (the
// listener's close ends the test's connections' peers with it).
func acceptAll(t *testing.T, ln net.Listener) {
	conns := make(chan net.Conn, 16)
	go func() {
		defer close(conns)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range conns {
			c.Close()
		}
	})
}

func listenOn(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	acceptAll(t, ln)
	return ln
}

// nonLoopbackAddr is an address of this machine that is not loopback, or
// "" when it has none.
func nonLoopbackAddr(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

func TestDialKeepAlive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	open := func(t *testing.T, d *Dialer, c candidate.Candidate, target string) net.Conn {
		t.Helper()
		conn, err := d.Open(ctx, c, target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}

	t.Run("GW-3/loopback-peer-gets-no-keepalive", func(t *testing.T) {
		ln := listenOn(t, "127.0.0.1:0")
		var d Dialer
		if k := keepAliveOf(t, open(t, &d, candidate.Direct, ln.Addr().String())); k.on != 0 {
			t.Fatalf("direct path to a loopback destination: SO_KEEPALIVE %d, want 0", k.on)
		}
		gw, err := d.DialGateway(ctx, candidate.Candidate{Kind: candidate.KindHTTP, Addr: ln.Addr().String()})
		if err != nil {
			t.Fatal(err)
		}
		defer gw.Close()
		if k := keepAliveOf(t, gw); k.on != 0 {
			t.Fatalf("loopback gateway: SO_KEEPALIVE %d, want 0", k.on)
		}
	})

	t.Run("GW-3/name-resolving-to-loopback-gets-no-keepalive", func(t *testing.T) {
		ln := listenOn(t, "127.0.0.1:0")
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip4", "localhost")
		if err != nil || len(ips) == 0 || !ips[0].IsLoopback() {
			t.Skipf("localhost does not resolve to an IPv4 loopback address here (%v %v)", ips, err)
		}
		var d Dialer
		if k := keepAliveOf(t, open(t, &d, candidate.Direct, net.JoinHostPort("localhost", port))); k.on != 0 {
			t.Fatalf("localhost: SO_KEEPALIVE %d, want 0", k.on)
		}
	})

	t.Run("GW-3/other-peer-gets-gos-default-keepalive", func(t *testing.T) {
		ip := nonLoopbackAddr(t)
		if ip == "" {
			t.Skip("this machine has no non-loopback IPv4 address to dial itself on")
		}
		ln := listenOn(t, net.JoinHostPort(ip, "0"))
		// The reference: what Go's own dialer sets by default.
		ref, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Close()
		want := keepAliveOf(t, ref)
		if want != (keepAlive{1, 15, 15, 9}) {
			t.Fatalf("Go's default dialer set %+v: the check below assumes {1 15 15 9}", want)
		}
		var d Dialer
		if got := keepAliveOf(t, open(t, &d, candidate.Direct, ln.Addr().String())); got != want {
			t.Fatalf("direct path to %s: keepalive %+v, want Go's default %+v", ip, got, want)
		}
	})

	t.Run("GW-3/own-keepalive-settings-kept", func(t *testing.T) {
		ln := listenOn(t, "127.0.0.1:0")
		d := Dialer{Net: net.Dialer{KeepAlive: 30 * time.Second}}
		if k := keepAliveOf(t, open(t, &d, candidate.Direct, ln.Addr().String())); k.on == 0 || k.idle != 30 {
			t.Fatalf("Net.KeepAlive 30s to a loopback peer: %+v, want on with idle 30", k)
		}
	})
}

func TestLoopbackPeer(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, true},
		{&net.TCPAddr{IP: net.IPv4(127, 3, 2, 1)}, true},
		{&net.TCPAddr{IP: net.IPv6loopback}, true},
		{&net.TCPAddr{IP: net.IPv4(192, 0, 2, 1)}, false},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1")}, false},
		{&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, false},
		{nil, false},
	} {
		t.Run("GW-3/"+addrName(tc.addr), func(t *testing.T) {
			if got := loopbackPeer(tc.addr); got != tc.want {
				t.Fatalf("loopbackPeer(%v) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
}

func addrName(a net.Addr) string {
	if a == nil {
		return "nil"
	}
	return a.Network() + "-" + a.String()
}

// BenchmarkOpenLoopback is a direct path's dial to a loopback destination
// and its close, with the accepting end in this process (a new
// tunnel's upstream connection). "go-default-keepalive" sets what Go's
// dialer sets by default (15 s probes, four setsockopt calls), what every
// dial did before loopback peers went without.
func BenchmarkOpenLoopback(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		d    *Dialer
	}{
		{"loopback-without-keepalive", &Dialer{}},
		{"go-default-keepalive", &Dialer{Net: net.Dialer{KeepAlive: 15 * time.Second}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			testkit.ReportCPU(b)
			for b.Loop() {
				c, err := bc.d.Open(ctx, candidate.Direct, ln.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}
