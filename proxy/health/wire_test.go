package health

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// A health check is one request on a fresh connection that closes after
// it: to an http gateway in absolute-form with the gateway's
// Proxy-Authorization, "Connection: close", the health User-Agent and no
// Via; the connection is closed by the proxy even when the answer keeps
// it alive, and a second check dials again (nothing is pooled).
func TestHealthCheckRequestOnTheWire(t *testing.T) {
	t.Run("HC-1/absolute-form-proxy-auth-connection-close-not-pooled", func(t *testing.T) {
		heads := make(chan string, 4)
		closed := make(chan bool, 4)
		gw := testkit.ServeConns(t, func(c net.Conn) {
			c.SetDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(c)
			var head strings.Builder
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					heads <- "read: " + err.Error()
					return
				}
				head.WriteString(line)
				if line == "\r\n" {
					break
				}
			}
			heads <- head.String()
			fmt.Fprint(c, "HTTP/1.1 204 No Content\r\nServer: origin\r\n\r\n") // keep-alive
			_, err := br.ReadByte()
			closed <- err == io.EOF
		})
		c := gatewayCand(t, "http://u:p@"+gw)
		h, state := startChecker(t, newProbeTarget(t, "http://health.example:8080/gen_204?x=1", nil, c, candidate.Direct), nil)
		for i := range 2 {
			h.Run()
			if p := state.Preferred(); p != c.Key() {
				t.Fatalf("check %d: preferred %q, want %q", i, p, c.Key())
			}
			head := <-heads
			for _, want := range []string{
				"GET http://health.example:8080/gen_204?x=1 HTTP/1.1\r\n",
				"\r\nHost: health.example:8080\r\n",
				"\r\nUser-Agent: dual-proxy-health/1\r\n",
				"\r\nProxy-Authorization: Basic dTpw\r\n",
				"\r\nConnection: close\r\n",
			} {
				if !strings.Contains(head, want) {
					t.Errorf("check %d: head lacks %q:\n%s", i, want, head)
				}
			}
			if strings.Contains(strings.ToLower(head), "\nvia:") {
				t.Errorf("check %d: head carries Via:\n%s", i, head)
			}
			if !<-closed {
				t.Fatalf("check %d: the proxy kept the connection open after the answer", i)
			}
		}
	})
}
