package proxy

import (
	"errors"
	"net"
	"testing"
)

func TestProbeBeforeBind(t *testing.T) {
	for _, tc := range []struct {
		goos, host string
		want       bool
	}{
		{"darwin", "127.0.0.1", true},
		{"darwin", "::1", true},
		{"darwin", "localhost", true},
		{"darwin", "192.168.1.5", true},
		{"darwin", "0.0.0.0", false},
		{"darwin", "::", false},
		{"darwin", "", false},
		{"freebsd", "127.0.0.1", true},
		{"linux", "127.0.0.1", false},
		{"windows", "127.0.0.1", false},
	} {
		t.Run("PLAT-6/LIS-1/probe-"+tc.goos+"-"+tc.host, func(t *testing.T) {
			if got := probeBeforeBind(tc.goos, tc.host); got != tc.want {
				t.Fatalf("probeBeforeBind(%q, %q) = %v, want %v", tc.goos, tc.host, got, tc.want)
			}
		})
	}
}

// TestListenShadowedPort runs macOS's rules on every OS: a listener that answers on the port
// (on macOS a wildcard one the specific bind would shadow; here any) makes the port busy.
func TestListenShadowedPort(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	port := held.Addr().(*net.TCPAddr).Port
	t.Run("PLAT-6/LIS-1/an-answering-port-is-busy-before-the-bind", func(t *testing.T) {
		ln, _, err := listenOn("darwin", "127.0.0.1", port, 0, nil)
		if err == nil {
			ln.Close()
			t.Fatal("bound a port another listener answers on")
		}
		if !errors.Is(err, errShadowed) {
			t.Fatalf("error %v, want the probe's (errShadowed), not the bind's", err)
		}
	})
	t.Run("PLAT-6/LIS-1/an-answering-port-falls-back", func(t *testing.T) {
		if port+8 > 65535 {
			t.Skipf("ephemeral port %d too close to the top", port)
		}
		ln, got, err := listenOn("darwin", "127.0.0.1", port, 8, nil)
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
		if got <= port || got > port+8 {
			t.Fatalf("bound %d, want one of %d-%d", got, port+1, port+8)
		}
	})
	t.Run("PLAT-6/LIS-1/a-free-port-is-bound-after-the-probe", func(t *testing.T) {
		free, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := free.Addr().(*net.TCPAddr).Port
		free.Close()
		ln, got, err := listenOn("darwin", "127.0.0.1", p, 0, nil)
		if err != nil {
			t.Fatalf("a free port: %v", err)
		}
		ln.Close()
		if got != p {
			t.Fatalf("bound %d, want %d", got, p)
		}
	})
}
