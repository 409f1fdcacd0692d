package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// TestRelayPeerShapes: the spliced relay (relaycopy_linux.go) under the
// shapes a destination or client can give a tunnel (SPEC CON-2).
func TestRelayPeerShapes(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	t.Run("CON-2/destination-fin-first-client-keeps-sending", func(t *testing.T) {
		got := make(chan int, 1)
		dst := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			io.WriteString(c, "bye")
			c.(*net.TCPConn).CloseWrite()
			n, _ := io.Copy(io.Discard, c)
			got <- int(n)
		})
		addr, _ := proxytest.Start(t, New, Config{Candidates: []candidate.Candidate{candidate.Direct}})
		c, br := proxytest.Tunnel(t, addr, dst)
		if b, err := io.ReadAll(br); string(b) != "bye" || err != nil {
			t.Fatalf("read %q %v", b, err)
		}
		if _, err := c.Write(big); err != nil {
			t.Fatalf("write after the destination's FIN: %v", err)
		}
		c.CloseWrite()
		select {
		case n := <-got:
			if n != len(big) {
				t.Fatalf("destination got %d bytes, want %d", n, len(big))
			}
		case <-time.After(8 * time.Second):
			t.Fatal("destination never saw the client's bytes and FIN")
		}
	})
	t.Run("CON-2/client-bytes-in-the-connect-write-reach-the-destination", func(t *testing.T) {
		got := make(chan string, 1)
		dst := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			b, _ := io.ReadAll(c)
			got <- string(b)
		})
		addr, _ := proxytest.Start(t, New, Config{Candidates: []candidate.Candidate{candidate.Direct}})
		c := proxytest.Dial(t, addr)
		io.WriteString(c, "CONNECT "+dst+" HTTP/1.1\r\nHost: "+dst+"\r\n\r\nSSH-2.0-early\r\n")
		if code, _ := proxytest.ReadConnectReply(t, bufio.NewReader(c)); code != 200 {
			t.Fatalf("CONNECT: %d", code)
		}
		c.(*net.TCPConn).CloseWrite()
		select {
		case s := <-got:
			if s != "SSH-2.0-early\r\n" {
				t.Fatalf("destination got %q", s)
			}
		case <-time.After(8 * time.Second):
			t.Fatal("early bytes never arrived")
		}
	})
	t.Run("CON-2/destination-reset-ends-the-tunnel-at-once", func(t *testing.T) {
		dst := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			var b [1]byte
			io.ReadFull(c, b[:])
			c.(*net.TCPConn).SetLinger(0) // RST
			c.Close()
		})
		addr, _ := proxytest.Start(t, New, Config{Candidates: []candidate.Candidate{candidate.Direct}})
		c, _ := proxytest.Tunnel(t, addr, dst)
		c.Write([]byte("x"))
		if !closedWithin(c, 5*time.Second) {
			t.Fatal("tunnel still open 5 s after the destination's reset (idle bound is 1 h)")
		}
	})
}
