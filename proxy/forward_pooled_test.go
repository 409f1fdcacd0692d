package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
)

// TestPooledConnectionReplay: a pooled upstream connection the origin
// closed or reset (idle, or under the request) costs an idempotent
// request one retry on a fresh connection and is never a replay of a
// POST or of a request whose answer had begun (SPEC HTTP-3).
func TestPooledConnectionReplay(t *testing.T) {
	rst := func(c *net.TCPConn) { c.SetLinger(0); c.Close() }
	fin := func(c *net.TCPConn) { c.Close() }
	half := func(c *net.TCPConn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhal")
		c.Close()
	}
	type shape struct {
		name, method, body string
		// idle runs on the first connection once it answered the first
		// GET (the proxy pools it); act[i] answers the i-th request
		// (0-based, all connections) instead of 200 "ok".
		idle func(c *net.TCPConn)
		act  map[int]func(c *net.TCPConn)
		// wantReqs: the requests the origin sees in all; status: the
		// client's (0: a head whose body ends early).
		wantReqs, status int
	}
	shapes := []shape{
		{"HTTP-3/GET-after-idle-FIN-goes-on-a-fresh-connection", "GET", "", fin, nil, 2, 200},
		{"HTTP-3/GET-after-idle-RST-goes-on-a-fresh-connection", "GET", "", rst, nil, 2, 200},
		{"HTTP-3/POST-after-idle-FIN-is-sent-once", "POST", "payload", fin, nil, 2, 200},
		{"HTTP-3/PUT-after-idle-RST-is-sent-once", "PUT", "payload", rst, nil, 2, 200},
		{"HTTP-3/GET-whose-reused-connection-closes-before-an-answer-is-retried-once", "GET", "", nil, map[int]func(*net.TCPConn){1: fin}, 3, 200},
		{"HTTP-3/GET-retried-at-most-once", "GET", "", nil, map[int]func(*net.TCPConn){1: fin, 2: fin, 3: fin}, 3, 502},
		{"HTTP-3/PUT-whose-reused-connection-resets-is-retried-once-with-its-body", "PUT", "payload", nil, map[int]func(*net.TCPConn){1: rst}, 3, 200},
		{"HTTP-3/POST-whose-connection-closes-after-the-request-is-not-replayed", "POST", "payload", nil, map[int]func(*net.TCPConn){1: fin}, 2, 502},
		{"HTTP-3/POST-whose-connection-resets-after-the-request-is-not-replayed", "POST", "payload", nil, map[int]func(*net.TCPConn){1: rst}, 2, 502},
		{"HTTP-3/POST-with-a-half-sent-answer-is-not-replayed", "POST", "payload", nil, map[int]func(*net.TCPConn){1: half}, 2, 0},
		{"HTTP-3/GET-with-a-half-sent-answer-is-not-replayed", "GET", "", nil, map[int]func(*net.TCPConn){1: half}, 2, 0},
	}
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			conns := 0
			acted := make(chan struct{})
			o := manyServer(t, func(nc net.Conn) {
				c := nc.(*net.TCPConn)
				mu.Lock()
				conns++
				n := conns
				mu.Unlock()
				br := bufio.NewReader(c)
				for i := 0; ; i++ {
					if n == 1 && i == 1 && s.idle != nil {
						s.idle(c)
						close(acted)
						return
					}
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					b, _ := io.ReadAll(req.Body)
					mu.Lock()
					k := len(seen)
					seen = append(seen, fmt.Sprintf("%s#%d:%s", req.Method, n, b))
					mu.Unlock()
					if f := s.act[k]; f != nil {
						f(c)
						return
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			})
			addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, true)})
			c := proxytest.Dial(t, addr)
			br := bufio.NewReader(c)
			fmt.Fprintf(c, "GET http://%s/a HTTP/1.1\r\nHost: %s\r\n\r\n", o, o)
			if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || body != "ok" {
				t.Fatalf("first GET: %d %q", resp.StatusCode, body)
			}
			if s.idle != nil {
				<-acted // the FIN or RST is queued at the proxy's end (loopback)
			}
			fmt.Fprintf(c, "%s http://%s/b HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", s.method, o, o, len(s.body), s.body)
			resp, err := http.ReadResponse(br, &http.Request{Method: s.method})
			if err != nil {
				t.Fatalf("second answer: %v", err)
			}
			body, berr := io.ReadAll(resp.Body)
			status := resp.StatusCode
			if berr != nil {
				status = 0
			}
			mu.Lock()
			defer mu.Unlock()
			if got := len(seen); got != s.wantReqs {
				t.Fatalf("origin saw %d requests %v, want %d", got, seen, s.wantReqs)
			}
			if status != s.status {
				t.Fatalf("status %d (%q, %v), want %d (origin saw %v)", status, body, berr, s.status, seen)
			}
			if status == 502 && s.method == "POST" {
				proxytest.MustContain(t, string(body), "non-idempotent request may have been delivered; not replayed")
			}
		})
	}
}
