package testworld

// Request flow of one SOCKS5 client connection (Gateway.serveSOCKS, RFC
// 1928 server side):
//
//	greeting ─┬─ blackhole ─────────────── discard until closed
//	          ├─ reset ─────────────────── RST
//	          ├─ status N ──────────────── an HTTP page (garbage), close
//	          ├─ no acceptable method ──── 05 FF, close
//	          └─ method ── [RFC 1929: wrong → 01 01, close]
//	               └─ CONNECT ─┬─ reply N (ModeSOCKSReply) ── close
//	                           └─ dial ── 05 00 … ── relay

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// ModeSOCKSReply answers a SOCKS5 CONNECT with the failure code rep (RFC
// 1928 §6: 0x01 general failure … 0x08 address type not supported) and
// closes. On an HTTP gateway it behaves as ModeStatus(502).
func ModeSOCKSReply(rep byte) Mode { return Mode{kind: kindSOCKSReply, status: int(rep)} }

// serveSOCKS handles one SOCKS5 client connection.
func (g *Gateway) serveSOCKS(c net.Conn) {
	br := bufio.NewReader(c)
	m := g.Mode()
	if m.kind == kindBlackhole {
		io.Copy(io.Discard, br)
		return
	}
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil || hdr[0] != 5 {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	switch m.kind {
	case kindReset:
		reset(c)
		return
	case kindStatus:
		g.answer(c, nil, m.status, "status "+strconv.Itoa(m.status))
		return
	}
	want := byte(0x00)
	if g.user != "" {
		want = 0x02
	}
	if !slices.Contains(methods, want) {
		c.Write([]byte{5, 0xff})
		return
	}
	c.Write([]byte{5, want})
	if want == 0x02 && !g.socksAuth(c, br) {
		return
	}
	target, ok := readSOCKSRequest(br)
	if !ok {
		return
	}
	g.connects.Add(1)
	g.mu.Lock()
	g.targets = append(g.targets, target)
	g.mu.Unlock()
	if m.kind == kindSOCKSReply {
		c.Write([]byte{5, byte(m.status), 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	up, err := g.dial(target)
	if err != nil {
		c.Write([]byte{5, 0x05, 0, 1, 0, 0, 0, 0, 0, 0}) // connection refused
		return
	}
	defer g.untrack(up)
	if m.kind == kindDelay && !g.wait(m.delay) {
		return
	}
	if _, err := c.Write([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0, 0}); err != nil {
		return
	}
	g.relay(c, br, up)
}

// socksAuth runs the RFC 1929 sub-negotiation; it reports success.
func (g *Gateway) socksAuth(c net.Conn, br *bufio.Reader) bool {
	field := func() (string, bool) {
		n, err := br.ReadByte()
		if err != nil {
			return "", false
		}
		b := make([]byte, n)
		_, err = io.ReadFull(br, b)
		return string(b), err == nil
	}
	if v, err := br.ReadByte(); err != nil || v != 1 {
		return false
	}
	user, ok1 := field()
	pass, ok2 := field()
	if !ok1 || !ok2 {
		return false
	}
	g.mu.Lock()
	g.lastAuth = "socks5 " + user
	g.mu.Unlock()
	if user != g.user || pass != g.pass {
		c.Write([]byte{1, 1})
		c.SetReadDeadline(time.Now().Add(time.Second))
		io.Copy(io.Discard, br) // let the client read the answer before FIN
		return false
	}
	c.Write([]byte{1, 0})
	return true
}

// readSOCKSRequest reads a CONNECT request and returns its target as
// "host:port": an IP literal for ATYP IPv4/IPv6, the name for DOMAINNAME.
func readSOCKSRequest(br *bufio.Reader) (string, bool) {
	var h [4]byte
	if _, err := io.ReadFull(br, h[:]); err != nil || h[0] != 5 || h[1] != 1 {
		return "", false
	}
	var host string
	switch h[3] {
	case 1, 4:
		ip := make(net.IP, map[byte]int{1: 4, 4: 16}[h[3]])
		if _, err := io.ReadFull(br, ip); err != nil {
			return "", false
		}
		host = ip.String()
	case 3:
		n, err := br.ReadByte()
		if err != nil {
			return "", false
		}
		name := make([]byte, n)
		if _, err := io.ReadFull(br, name); err != nil {
			return "", false
		}
		host = string(name)
	default:
		return "", false
	}
	var p [2]byte
	if _, err := io.ReadFull(br, p[:]); err != nil {
		return "", false
	}
	return net.JoinHostPort(host, strconv.Itoa(int(p[0])<<8|int(p[1]))), true
}

// socksReplyAsHTTP is ModeSOCKSReply on an HTTP gateway.
func socksReplyAsHTTP(m Mode) Mode {
	if m.kind == kindSOCKSReply {
		return ModeStatus(http.StatusBadGateway)
	}
	return m
}
