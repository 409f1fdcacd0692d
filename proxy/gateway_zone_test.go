package proxy

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// linkLocal returns an IPv6 link-local address of this machine with its
// interface as zone id ("fe80::1%eth0"), or skips: the dial through a
// zoned gateway needs one, and such an address is local to this host.
func linkLocal(t *testing.T) (ip, zone string) {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Skipf("interfaces: %v", err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() == nil && n.IP.IsLinkLocalUnicast() {
				return n.IP.String(), i.Name
			}
		}
	}
	t.Skip("no IPv6 link-local address on this machine")
	return "", ""
}

// A gateway on an IPv6 link-local address is reached on the link its zone
// id names, whether the URL writes the zone RFC 6874's way ("%25eth0") or
// curl's ("%eth0"), and the status shows the zone.
func TestLinkLocalGatewayWithZone(t *testing.T) {
	ip, zone := linkLocal(t)
	reached := make(chan string, 4)
	gw := proxytest.TCPServer(t, net.JoinHostPort(ip+"%"+zone, "0"), func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		reached <- line
		fmt.Fprint(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	})
	_, port, _ := net.SplitHostPort(gw)
	for name, url := range map[string]string{
		"GW-3/link-local-gateway-rfc6874-zone-dialled": "http://[" + ip + "%25" + zone + "]:" + port,
		"GW-3/link-local-gateway-bare-zone-dialled":    "http://[" + ip + "%" + zone + "]:" + port,
	} {
		t.Run(name, func(t *testing.T) {
			addr, srv := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, url)})
			c := proxytest.Dial(t, addr)
			fmt.Fprint(c, "CONNECT origin.example:443 HTTP/1.1\r\nHost: origin.example:443\r\n\r\n")
			if st, body := proxytest.ReadConnectReply(t, bufio.NewReader(c)); st != 200 {
				t.Fatalf("CONNECT through %s: %d %s", url, st, body)
			}
			if line := <-reached; !strings.HasPrefix(line, "CONNECT origin.example:443 ") {
				t.Fatalf("gateway got %q", line)
			}
			want := candidate.KindHTTP.String() + "://" + net.JoinHostPort(ip+"%"+zone, port)
			if got := srv.Status().Candidates[0].Candidate; got != want {
				t.Fatalf("status shows %q, want %q", got, want)
			}
		})
	}
}
