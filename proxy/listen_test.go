package proxy

import (
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestLoopbackKeepAlive(t *testing.T) {
	for host, want := range map[string]time.Duration{
		"127.0.0.1": -1, "127.3.4.5": -1, "::1": -1, "::ffff:127.0.0.1": -1, "localhost": -1, "LocalHost": -1,
		"0.0.0.0": 0, "::": 0, "192.168.1.2": 0, "": 0, "example.test": 0,
	} {
		t.Run("LIS-1/keepalive-"+host, func(t *testing.T) {
			if got := loopbackKeepAlive(host); got != want {
				t.Fatalf("loopbackKeepAlive(%q) = %v, want %v", host, got, want)
			}
		})
	}
}

func TestListen(t *testing.T) {
	t.Run("LIS-1/busy-port-falls-back-to-a-later-one", func(t *testing.T) {
		held, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		port := held.Addr().(*net.TCPAddr).Port
		if port+8 > 65535 {
			t.Skipf("ephemeral port %d too close to the top to try later ones", port)
		}
		ln, got, err := Listen("127.0.0.1", port, 8)
		if err != nil {
			t.Fatalf("Listen(%d, fallback 8): %v (a busy port must move on, not fail)", port, err)
		}
		ln.Close()
		if got <= port || got > port+8 {
			t.Fatalf("bound %d, want one of %d-%d", got, port+1, port+8)
		}
	})
	t.Run("LIS-1/all-busy-names-the-hosts-holder-command", func(t *testing.T) {
		held, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		port := held.Addr().(*net.TCPAddr).Port
		ln, _, err := Listen("127.0.0.1", port, 0)
		if err == nil {
			ln.Close()
			t.Fatal("Listen on a held port succeeded")
		}
		if want := holderHint(runtime.GOOS, port); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "all in use") {
			t.Fatalf("error %q does not name %q", err, want)
		}
	})
	for goos, want := range map[string]string{
		"linux":   "ss -tanp | grep :7898",
		"darwin":  "lsof -nP -iTCP:7898",
		"windows": "netstat -ano | findstr :7898",
	} {
		t.Run("LIS-1/holder-hint-"+goos, func(t *testing.T) {
			if got := holderHint(goos, 7898); got != want {
				t.Fatalf("holderHint(%s) = %q, want %q", goos, got, want)
			}
		})
	}
}
