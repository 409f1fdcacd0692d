package dial

import (
	"context"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// loopbackName is the name of this machine's loopback interface ("lo",
// "lo0"), a zone id any IPv6 loopback dial accepts.
func loopbackName(t *testing.T) string {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 {
			return i.Name
		}
	}
	t.Fatal("no loopback interface")
	return ""
}

func TestGatewayZoneReachesTheDial(t *testing.T) {
	t.Run("GW-3/ipv6-zone-id-kept-through-to-the-dial", func(t *testing.T) {
		ln, err := net.Listen("tcp", "[::1]:0")
		if err != nil {
			t.Skipf("no IPv6 loopback on this machine: %v", err)
		}
		defer ln.Close()
		accepted := make(chan struct{})
		go func() {
			if c, err := ln.Accept(); err == nil {
				c.Close()
			}
			close(accepted)
		}()
		zone := loopbackName(t)
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		c, err := route.ParseGateway("http://[::1%25"+zone+"]:"+port, "gateway")
		if err != nil {
			t.Fatal(err)
		}
		dialed := make(chan string, 1)
		d := &Dialer{Net: net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
			dialed <- address
			return nil
		}}}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := d.DialGateway(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		conn.Close()
		<-accepted
		if got, want := <-dialed, "[::1%"+zone+"]:"+port; got != want {
			t.Fatalf("dialed %s, want %s (the zone id is lost)", got, want)
		}
	})
}
