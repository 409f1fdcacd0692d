package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
)

// TestNewTunnelsPastDeadGateways: many new tunnels at once while the first
// gateway refuses connections and the second accepts and never answers
// (SPEC CON-1, ORD-2, ORD-5): every tunnel opens through the third and
// carries its bytes both ways with its half-close; once the two are in
// cooldown a new tunnel does not wait for the silent one.
func TestNewTunnelsPastDeadGateways(t *testing.T) {
	t.Run("ORD-2/many-new-tunnels-with-a-dead-and-a-blackholed-gateway", func(t *testing.T) {
		dead, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		deadAddr := dead.Addr().String()
		dead.Close()
		silent := manyServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
		var mu sync.Mutex
		opened := 0
		live := manyServer(t, func(c net.Conn) {
			br := bufio.NewReader(c)
			h, err := http.ReadRequest(br)
			if err != nil || h.Method != http.MethodConnect {
				return
			}
			mu.Lock()
			opened++
			mu.Unlock()
			io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
			got, _ := io.ReadAll(br)
			io.WriteString(c, "got:"+string(got))
		})
		const connectTimeout = 3 * time.Second
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+deadAddr, "http://"+silent, "http://"+live),
			ConnectTimeout: connectTimeout, Cooldown: time.Minute})
		const n = 32
		errs := make(chan error, n)
		for i := range n {
			go func() {
				errs <- func() error {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						return err
					}
					defer c.Close()
					c.SetDeadline(time.Now().Add(30 * time.Second))
					fmt.Fprintf(c, "CONNECT t%d.test:443 HTTP/1.1\r\nHost: t%d.test:443\r\n\r\n", i, i)
					br := bufio.NewReader(c)
					line, err := br.ReadString('\n')
					if err != nil || line != "HTTP/1.1 200 Connection established\r\n" {
						return fmt.Errorf("tunnel %d: %q %v", i, line, err)
					}
					if l, err := br.ReadString('\n'); err != nil || l != "\r\n" {
						return fmt.Errorf("tunnel %d: %q %v", i, l, err)
					}
					msg := fmt.Sprintf("tunnel-%d", i)
					io.WriteString(c, msg)
					c.(*net.TCPConn).CloseWrite()
					got, err := io.ReadAll(br)
					if err != nil || string(got) != "got:"+msg {
						return fmt.Errorf("tunnel %d: %q %v", i, got, err)
					}
					return nil
				}()
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		mu.Lock()
		if opened != n {
			t.Errorf("the live gateway opened %d tunnels, want %d", opened, n)
		}
		mu.Unlock()
		start := time.Now()
		c := proxytest.Dial(t, addr)
		io.WriteString(c, "CONNECT after.test:443 HTTP/1.1\r\nHost: after.test:443\r\n\r\n")
		br := bufio.NewReader(c)
		if code, _ := proxytest.ReadConnectReply(t, br); code != 200 {
			t.Fatalf("after: %d", code)
		}
		if d := time.Since(start); d >= connectTimeout {
			t.Fatalf("a tunnel after the cooldowns took %v: it waited for a gateway in cooldown", d)
		}
	})
}
