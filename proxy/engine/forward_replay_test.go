package engine_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

// fwPost is a POST of body to origin's /p with extra header lines.
func fwPost(method string, o *testworld.Origin, extra, body string) string {
	return fmt.Sprintf("%s %s/p HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n%s\r\n%s", method, o.URL, o.Addr, len(body), extra, body)
}

func TestReplayPolicy(t *testing.T) {
	t.Run("HTTP-3/post-refused-connect-replayed-on-next-origin-sees-once", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		good := testworld.NewGateway(t)
		addr, _ := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, testworld.RefusedAddr(t), good.Addr)})
		resp, body := proxytest.Send(t, addr, fwPost("POST", origin, "", "hello"))
		if resp.StatusCode != 200 || body != origin.Greeting() {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
		if origin.Count() != 1 || string(origin.Requests()[0].Body) != "hello" {
			t.Fatalf("origin saw %d requests", origin.Count())
		}
	})

	// A first gateway that delivers the request, then resets: the request
	// reached the origin once.
	cases := []struct {
		name       string
		cfg        func(*engine.Config)
		method     string
		extra      string
		wantReplay bool
	}{
		{"HTTP-3/post-reset-after-send-502-not-replayed", nil, "POST", "", false},
		{"HTTP-3/patch-reset-after-send-502-not-replayed", nil, "PATCH", "", false},
		{"HTTP-3/post-with-key-but-flag-off-not-replayed", nil, "POST", "Idempotency-Key: k1\r\n", false},
		{"HTTP-3/retry-non-idempotent-after-send-replays", func(c *engine.Config) { c.RetryNonIdempotentAfterSend = true }, "POST", "", true},
		{"HTTP-3/idempotency-key-replays", func(c *engine.Config) { c.RetryWithIdempotencyKey = true }, "POST", "Idempotency-Key: k1\r\n", true},
		{"HTTP-3/x-idempotency-key-replays", func(c *engine.Config) { c.RetryWithIdempotencyKey = true }, "POST", "X-Idempotency-Key: k2\r\n", true},
		{"HTTP-3/empty-idempotency-key-not-replayed", func(c *engine.Config) { c.RetryWithIdempotencyKey = true }, "POST", "Idempotency-Key: \r\n", false},
		{"HTTP-3/no-idempotency-key-not-replayed", func(c *engine.Config) { c.RetryWithIdempotencyKey = true }, "POST", "", false},
		{"HTTP-3/get-replayed", nil, "GET", "", true},
		{"HTTP-3/put-replayed", nil, "PUT", "", true},
		{"HTTP-3/delete-replayed", nil, "DELETE", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			origin := testworld.NewOrigin(t)
			bad := testworld.NewGateway(t, testworld.WithName("bad"))
			bad.SetMode(testworld.ModeResetAfterSend)
			good := testworld.NewGateway(t, testworld.WithName("good"))
			cfg := engine.Config{Candidates: proxytest.Gateways(t, false, bad.Addr, good.Addr)}
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			addr, _ := proxytest.Start(t, proxy.New, cfg)
			resp, body := proxytest.Send(t, addr, fwPost(tc.method, origin, tc.extra, "data"))
			if bad.Requests() != 1 {
				t.Fatalf("first gateway saw %d requests", bad.Requests())
			}
			if !tc.wantReplay {
				if resp.StatusCode != 502 || body != engine.NonIdempotentBody {
					t.Fatalf("got %d %q, want 502 %q", resp.StatusCode, body, engine.NonIdempotentBody)
				}
				if good.Requests() != 0 || origin.Count() > 1 {
					t.Fatalf("replayed: next gateway %d, origin %d", good.Requests(), origin.Count())
				}
				return
			}
			if resp.StatusCode != 200 || resp.Header.Get("X-Testworld-Gateway") != "good" {
				t.Fatalf("got %d via %q", resp.StatusCode, resp.Header.Get("X-Testworld-Gateway"))
			}
			if good.Requests() != 1 || origin.Count() != 2 {
				t.Fatalf("next gateway %d, origin %d", good.Requests(), origin.Count())
			}
			for _, s := range origin.Requests() {
				if string(s.Body) != "data" {
					t.Fatalf("origin body %q", s.Body)
				}
			}
		})
	}

	// A gateway that starts its answer and dies mid-head (or answers
	// garbage): the client has received nothing yet.
	halfHead := func(t *testing.T, hits *atomic.Int64) string {
		return proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			http.ReadRequest(bufio.NewReader(c))
			hits.Add(1)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Half: ")
			c.(*net.TCPConn).SetLinger(0)
		})
	}
	t.Run("HTTP-3/incomplete-response-head-GET-replayed", func(t *testing.T) {
		var hits atomic.Int64
		partial := halfHead(t, &hits)
		good := testworld.NewGateway(t)
		origin := testworld.NewOrigin(t)
		addr, _ := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, partial, good.Addr)})
		resp, body := proxytest.Send(t, addr, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: "+origin.Addr+"\r\n\r\n")
		if resp.StatusCode != 200 || body != origin.Greeting() {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
		if hits.Load() != 1 || good.Requests() != 1 {
			t.Fatalf("partial %d, next gateway %d", hits.Load(), good.Requests())
		}
	})
	t.Run("HTTP-3/incomplete-response-head-POST-not-replayed", func(t *testing.T) {
		var hits atomic.Int64
		partial := halfHead(t, &hits)
		good := testworld.NewGateway(t)
		origin := testworld.NewOrigin(t)
		addr, _ := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, partial, good.Addr)})
		resp, body := proxytest.Send(t, addr, "POST "+origin.URL+"/ HTTP/1.1\r\nHost: "+origin.Addr+"\r\nContent-Length: 2\r\n\r\nhi")
		if resp.StatusCode != 502 || body != engine.NonIdempotentBody {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
		if hits.Load() != 1 || good.Requests() != 0 {
			t.Fatalf("partial %d, next gateway %d", hits.Load(), good.Requests())
		}
	})

	t.Run("HTTP-3/streaming-response-never-replayed", func(t *testing.T) {
		var hits atomic.Int64
		partial := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			http.ReadRequest(bufio.NewReader(c))
			hits.Add(1)
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nfirst part")
			c.(*net.TCPConn).SetLinger(0)
		})
		good := testworld.NewGateway(t)
		origin := testworld.NewOrigin(t)
		addr, srv := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, partial, good.Addr), Cooldown: time.Minute})
		c := proxytest.Dial(t, addr)
		io.WriteString(c, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: "+origin.Addr+"\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || err == nil || string(got) != "first part" {
			t.Fatalf("got %d %q %v; want the truncated stream with an error", resp.StatusCode, got, err)
		}
		if hits.Load() != 1 || good.Requests() != 0 {
			t.Fatalf("partial %d, next gateway %d", hits.Load(), good.Requests())
		}
		// CD-1: a failure after the body started records no cooldown.
		if srv.Engine().Cooldowns().Cooling(partial, origin.Addr) {
			t.Fatal("stream failure recorded a cooldown")
		}
	})

	t.Run("HTTP-3/post-never-sent-twice-by-transport-retries", func(t *testing.T) {
		// A gateway that keeps its first connection alive after one answer
		// and then hangs up on the next request on that connection: the
		// case where net/http silently retries replayable requests (an
		// Idempotency-Key makes a bodyless POST "replayable" to it).
		var mu sync.Mutex
		conns, reqs := 0, 0
		gw := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			mu.Lock()
			conns++
			first := conns == 1
			mu.Unlock()
			br := bufio.NewReader(c)
			for i := 0; ; i++ {
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				mu.Lock()
				reqs++
				mu.Unlock()
				if !first || i > 0 {
					return // close without answering
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		})
		addr, _ := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, gw)})
		raw := "POST http://example.test/p HTTP/1.1\r\nHost: example.test\r\nIdempotency-Key: k\r\nContent-Length: 0\r\n\r\n"
		if resp, body := proxytest.Send(t, addr, raw); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("first: %d %q", resp.StatusCode, body)
		}
		resp, body := proxytest.Send(t, addr, raw)
		mu.Lock()
		defer mu.Unlock()
		if reqs > 2 {
			t.Fatalf("gateway saw %d POSTs for 2 client requests (silent retry)", reqs)
		}
		if resp.StatusCode == 502 && body != engine.NonIdempotentBody {
			t.Fatalf("502 body %q", body)
		}
	})
}

func TestGatewayFailureStatus(t *testing.T) {
	for _, code := range []int{500, 502, 503, 504} {
		t.Run(fmt.Sprintf("HTTP-5c/get-%d-moves-to-next", code), func(t *testing.T) {
			origin := testworld.NewOrigin(t)
			bad := testworld.NewGateway(t, testworld.WithName("bad"))
			bad.SetMode(testworld.ModeStatus(code))
			good := testworld.NewGateway(t, testworld.WithName("good"))
			addr, srv := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, bad.Addr, good.Addr), Cooldown: time.Minute})
			resp, body := proxytest.Send(t, addr, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: "+origin.Addr+"\r\n\r\n")
			if resp.StatusCode != 200 || body != origin.Greeting() || resp.Header.Get("X-Testworld-Gateway") != "good" {
				t.Fatalf("got %d %q", resp.StatusCode, body)
			}
			if !srv.Engine().Cooldowns().Cooling(bad.Addr, origin.Addr) {
				t.Fatal("CD-1: no host cooldown for the failing gateway")
			}
		})
	}
	t.Run("HTTP-5c/post-503-returned-as-is-not-replayed", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		bad := testworld.NewGateway(t, testworld.WithName("bad"))
		bad.SetMode(testworld.ModeStatus(503))
		good := testworld.NewGateway(t)
		addr, _ := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, bad.Addr, good.Addr)})
		resp, body := proxytest.Send(t, addr, fwPost("POST", origin, "", "x"))
		if resp.StatusCode != 503 || !strings.Contains(body, "gateway bad") || good.Requests() != 0 {
			t.Fatalf("got %d %q, next gateway %d", resp.StatusCode, body, good.Requests())
		}
	})
	t.Run("HTTP-5c/last-candidate-answer-returned-as-is", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		a := testworld.NewGateway(t, testworld.WithName("a"))
		a.SetMode(testworld.ModeStatus(502))
		b := testworld.NewGateway(t, testworld.WithName("b"))
		b.SetMode(testworld.ModeStatus(504))
		addr, _ := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, a.Addr, b.Addr)})
		resp, body := proxytest.Send(t, addr, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: "+origin.Addr+"\r\n\r\n")
		if resp.StatusCode != 504 || !strings.Contains(body, "gateway b") {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	})
	t.Run("HTTP-5c/direct-5xx-is-the-origins-answer", func(t *testing.T) {
		var hits atomic.Int64
		origin := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.WriteHeader(503)
		}))
		gw := testworld.NewGateway(t)
		addr, _ := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, true, gw.Addr), LoopbackDirect: true})
		resp, _ := proxytest.Send(t, addr, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: "+origin.Addr+"\r\n\r\n")
		if resp.StatusCode != 503 || hits.Load() != 1 || gw.Accepted() != 0 {
			t.Fatalf("got %d, origin %d, gateway %d", resp.StatusCode, hits.Load(), gw.Accepted())
		}
	})
	t.Run("GW-4/407-moves-post-to-next-and-never-reaches-client", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		authGW := testworld.NewGateway(t, testworld.WithAuth("u", "right"))
		good := testworld.NewGateway(t, testworld.WithName("good"))
		wrong := "http://u:wrong@" + authGW.Addr
		addr, srv := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, wrong, good.Addr), Cooldown: time.Minute})
		resp, body := proxytest.Send(t, addr, fwPost("POST", origin, "", "once"))
		if resp.StatusCode != 200 || body != origin.Greeting() || origin.Count() != 1 {
			t.Fatalf("got %d %q, origin %d", resp.StatusCode, body, origin.Count())
		}
		if !srv.Engine().Cooldowns().Cooling(authGW.Addr, "other.example") {
			t.Fatal("CD-1: 407 must cool the gateway for all hosts")
		}
		// Only the 407 gateway left: 502, not the gateway's 407.
		addr2, _ := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, wrong)})
		resp, _ = proxytest.Send(t, addr2, fwPost("POST", origin, "", "x"))
		if resp.StatusCode != 502 {
			t.Fatalf("got %d, want 502", resp.StatusCode)
		}
	})
}

func TestTinyproxy401(t *testing.T) {
	// tinyproxy 1.11 answers wrong proxy credentials with 401 and its own
	// Server header, on plain requests as on CONNECT (SPEC CD-1, GW-4).
	fake := func(server string) string {
		return proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			http.ReadRequest(bufio.NewReader(c))
			io.WriteString(c, "HTTP/1.0 401 Unauthorized\r\nServer: "+server+"\r\nWWW-Authenticate: Basic realm=\"Tinyproxy\"\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope")
		})
	}
	origin := testworld.NewOrigin(t)
	t.Run("GW-4/tinyproxy-401-is-the-gateways-failure", func(t *testing.T) {
		good := testworld.NewGateway(t, testworld.WithName("good"))
		tp := fake("tinyproxy/1.11.1")
		addr, srv := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, "http://u:bad@"+tp, good.Addr), Cooldown: time.Minute})
		resp, _ := proxytest.Send(t, addr, fwPost("POST", origin, "", "x"))
		if resp.StatusCode != 200 || resp.Header.Get("X-Testworld-Gateway") != "good" {
			t.Fatalf("got %d", resp.StatusCode)
		}
		if !srv.Engine().Cooldowns().Cooling(tp, "elsewhere.example") {
			t.Fatal("CD-1: gateway-wide cooldown expected")
		}
	})
	t.Run("HTTP-5c/origin-401-through-gateway-passes", func(t *testing.T) {
		good := testworld.NewGateway(t)
		o401 := fake("origin/1")
		addr, _ := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, "http://u:p@"+o401, good.Addr)})
		if resp, body := proxytest.Send(t, addr, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 401 || body != "nope" || good.Requests() != 0 {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	})
}

func TestTimeouts(t *testing.T) {
	for _, tc := range []struct {
		method string
		replay bool
	}{{"GET", true}, {"POST", false}} {
		t.Run("HTTP-4/slow-response-header-"+tc.method, func(t *testing.T) {
			origin := testworld.NewOrigin(t)
			slow := testworld.NewGateway(t, testworld.WithName("slow"))
			good := testworld.NewGateway(t, testworld.WithName("good"))
			addr, srv := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, slow.Addr, good.Addr), ResponseTimeout: 300 * time.Millisecond, Cooldown: time.Minute})
			// The slow gateway answered once before it turned slow: its
			// timeout is then this host's, not the gateway's (one that
			// never answered is cooled for every host, race_plain_test.go).
			if resp, _ := proxytest.Send(t, addr, fwPost("GET", origin, "", "")); resp.StatusCode != 200 || slow.Requests() != 1 {
				t.Fatalf("first request: %d through the slow gateway's %d", resp.StatusCode, slow.Requests())
			}
			slow.SetMode(testworld.ModeDelay(5 * time.Second))
			start := time.Now()
			resp, body := proxytest.Send(t, addr, fwPost(tc.method, origin, "", "t"))
			if el := time.Since(start); el > 3*time.Second {
				t.Fatalf("took %v", el)
			}
			if tc.replay {
				if resp.StatusCode != 200 || resp.Header.Get("X-Testworld-Gateway") != "good" {
					t.Fatalf("got %d %q", resp.StatusCode, body)
				}
			} else if resp.StatusCode != 502 || body != engine.NonIdempotentBody || good.Requests() != 0 {
				t.Fatalf("got %d %q, next gateway %d", resp.StatusCode, body, good.Requests())
			}
			if !srv.Engine().Cooldowns().Cooling(slow.Addr, origin.Addr) || srv.Engine().Cooldowns().Cooling(slow.Addr, "other.example") {
				t.Fatal("CD-1: a response-header timeout is a host-scoped cooldown")
			}
		})
	}

	t.Run("HTTP-4/connect-timeout-blackhole-moves-on", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		good := testworld.NewGateway(t)
		// A listener with a full backlog would be needed for a real SYN
		// timeout; a gateway that accepts and never answers costs the
		// response timeout instead (connected: GET only).
		addr, _ := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, testworld.Blackhole(t), good.Addr), ResponseTimeout: 300 * time.Millisecond})
		start := time.Now()
		resp, _ := proxytest.Send(t, addr, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: "+origin.Addr+"\r\n\r\n")
		if resp.StatusCode != 200 || time.Since(start) > 3*time.Second {
			t.Fatalf("got %d after %v", resp.StatusCode, time.Since(start))
		}
	})

	t.Run("HTTP-4/client-gone-cancels-upstream-without-cooldown", func(t *testing.T) {
		cancelled := make(chan struct{})
		origin := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
				close(cancelled)
			case <-time.After(10 * time.Second):
			}
		}))
		addr, srv := proxytest.Start(t, proxy.New, engine.Config{LoopbackDirect: true, Cooldown: time.Minute})
		c := proxytest.Dial(t, addr)
		io.WriteString(c, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: "+origin.Addr+"\r\n\r\n")
		testkit.WaitFor(t, 5*time.Second, "origin got the request", func() bool { return origin.Count() == 1 })
		c.Close()
		select {
		case <-cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("upstream request not cancelled after the client left")
		}
		testkit.WaitFor(t, 5*time.Second, "decision recorded", func() bool {
			d := srv.Engine().Decisions()
			return len(d) == 1 && d[0].Error == "client gone"
		})
		if srv.Engine().Cooldowns().Cooling("direct", origin.Addr) {
			t.Fatal("client disconnect recorded a cooldown")
		}
	})
}
