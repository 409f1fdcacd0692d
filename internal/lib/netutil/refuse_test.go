package netutil

import (
	"net"
	"strconv"
	"testing"
	"time"
)

func TestRefusingPort(t *testing.T) {
	p, err := ReserveRefusingPort()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Port))
	t.Run("RUN-1/refusing-port-refuses-connections", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("dial %s succeeded: the port listens", addr)
		}
	})
	t.Run("RUN-1/refusing-port-cannot-be-taken-by-a-listener", func(t *testing.T) {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			ln.Close()
			t.Fatalf("listen on the held port %s succeeded", addr)
		}
		if !IsAddrInUse(err) {
			t.Fatalf("listen on the held port: %v, want address in use", err)
		}
	})
	t.Run("RUN-1/close-releases-the-port", func(t *testing.T) {
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen after Close: %v", err)
		}
		ln.Close()
	})
}
