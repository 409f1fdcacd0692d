package proxy

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

	"github.com/dual-proxy/dual-proxy/internal/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// plainVia sends "METHOD http://host/path" with body through the proxy at
// addr on a fresh connection and returns the status, body and how long the
// answer took.
func plainVia(t *testing.T, addr, method, host, body string) (int, string, time.Duration) {
	t.Helper()
	c := dialProxy(t, addr)
	start := time.Now()
	fmt.Fprintf(c, "%s http://%s/x HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", method, host, host, len(body), body)
	resp, got := readResponse(t, bufio.NewReader(c), method)
	return resp.StatusCode, got, time.Since(start)
}

// countingOrigin is a loopback origin that counts the requests of each
// method and answers "ok".
func countingOrigin(t *testing.T) (*testworld.Origin, *atomic.Int32, *atomic.Int32) {
	var gets, posts atomic.Int32
	o := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodPost {
			posts.Add(1)
		} else {
			gets.Add(1)
		}
		io.WriteString(w, "ok")
	}))
	return o, &gets, &posts
}

// silentAndGood are a gateway that accepts TCP and never answers, and a
// working one that routes each of names (port 80) to origin.
func silentAndGood(t *testing.T, origin *testworld.Origin, names ...string) (silent, good *testworld.Gateway) {
	silent = testworld.NewGateway(t)
	silent.SetMode(testworld.ModeBlackhole)
	var opts []testworld.GatewayOption
	for _, n := range names {
		opts = append(opts, testworld.WithRoute(n+":80", origin.Addr))
	}
	return silent, testworld.NewGateway(t, opts...)
}

// A silent first gateway costs a plain request the race delay, not the
// response timeout (SPEC ORD-6, HTTP-3, CD-1).
func TestSilentGatewayPlain(t *testing.T) {
	// The response timeout is the default's 60 s: only racing or proving
	// can answer within the bounds below.
	cfg := func(silent, good *testworld.Gateway) Config {
		return Config{Candidates: gateways(t, false, silent.URL, good.URL), RaceDelay: 250 * time.Millisecond,
			ResponseTimeout: time.Minute, Cooldown: time.Minute}
	}

	t.Run("ORD-6/plain-get-through-silent-then-good-answers-within-1s", func(t *testing.T) {
		origin, gets, _ := countingOrigin(t)
		silent, good := silentAndGood(t, origin, "one.test")
		addr, _ := startProxy(t, cfg(silent, good))
		code, body, took := plainVia(t, addr, "GET", "one.test", "")
		if code != 200 || body != "ok" {
			t.Fatalf("answer %d %q", code, body)
		}
		// Wide bound for a busy machine; the bench measures the figure.
		if took > time.Second {
			t.Fatalf("GET took %v through [silent, good]", took)
		}
		if silent.Accepted() != 1 || good.Requests() != 1 || gets.Load() != 1 {
			t.Fatalf("silent accepted %d, good forwarded %d, origin got %d", silent.Accepted(), good.Requests(), gets.Load())
		}
	})

	t.Run("ORD-6/ten-new-hosts-through-the-same-silent-gateway-each-within-1s", func(t *testing.T) {
		var names []string
		for i := range 10 {
			names = append(names, fmt.Sprintf("h%d.test", i))
		}
		origin, gets, _ := countingOrigin(t)
		silent, good := silentAndGood(t, origin, names...)
		addr, _ := startProxy(t, cfg(silent, good))
		for _, n := range names {
			code, body, took := plainVia(t, addr, "GET", n, "")
			if code != 200 || body != "ok" || took > time.Second {
				t.Fatalf("%s: answer %d %q after %v", n, code, body, took)
			}
		}
		if gets.Load() != 10 {
			t.Fatalf("origin got %d GETs, want 10", gets.Load())
		}
	})

	t.Run("HTTP-3/post-through-silent-then-good-sent-once-within-1s", func(t *testing.T) {
		origin, _, posts := countingOrigin(t)
		_, good := silentAndGood(t, origin, "post.test")
		// A silent gateway that keeps the request line of every
		// connection it accepted, and never answers.
		var mu sync.Mutex
		var lines []string
		silentAddr := tcpServer(t, "127.0.0.1:0", func(c net.Conn) {
			if l, err := bufio.NewReader(c).ReadString('\n'); err == nil {
				mu.Lock()
				lines = append(lines, strings.TrimSpace(l))
				mu.Unlock()
			}
			io.Copy(io.Discard, c)
		})
		addr, _ := startProxy(t, Config{Candidates: gateways(t, false, "http://"+silentAddr, good.URL), RaceDelay: 250 * time.Millisecond,
			ResponseTimeout: time.Minute, Cooldown: time.Minute})
		code, body, took := plainVia(t, addr, "POST", "post.test", "payload")
		if code != 200 || body != "ok" {
			t.Fatalf("answer %d %q", code, body)
		}
		// The documented cost: the race delay of the proof race (250 ms)
		// and one CONNECT through the good gateway.
		if took > time.Second {
			t.Fatalf("POST took %v through [silent, good]", took)
		}
		if posts.Load() != 1 || good.Requests() != 1 {
			t.Fatalf("origin got %d POSTs, good forwarded %d: want exactly one", posts.Load(), good.Requests())
		}
		// The silent gateway was sent the proof (a CONNECT to the
		// request's host and port), never the POST.
		mu.Lock()
		defer mu.Unlock()
		if len(lines) != 1 || lines[0] != "CONNECT post.test:80 HTTP/1.1" {
			t.Fatalf("the silent gateway read %q, want only the proof's CONNECT", lines)
		}
	})
}

// The race's loser is interrupted: its connection to the silent gateway is
// closed as soon as the other path answered, and it records no cooldown
// (SPEC ORD-6).
func TestPlainRaceLoser(t *testing.T) {
	t.Run("ORD-6/plain-race-loser-closed-no-cooldown", func(t *testing.T) {
		origin, _, _ := countingOrigin(t)
		silent := newSilentGateway(t)
		good := testworld.NewGateway(t, testworld.WithRoute("loser.test:80", origin.Addr))
		c1 := selCand(t, "http://"+silent.Addr)
		addr, e := selProxy(t, Config{Candidates: []candidate.Candidate{c1, selCand(t, good.URL)},
			RaceDelay: 50 * time.Millisecond, ResponseTimeout: time.Minute, Cooldown: time.Minute})
		if code, _, _ := plainVia(t, addr, "GET", "loser.test", ""); code != 200 {
			t.Fatalf("GET: %d", code)
		}
		testkit.WaitFor(t, 2*time.Second, "the loser's connection closed", func() bool { return silent.Open() == 0 })
		if e.cooldowns.Cooling(c1.Key(), "loser.test:80") {
			t.Fatal("the race's loser was put in cooldown")
		}
		if d := selLastDecision(t, e); d.Candidate != good.URL || len(d.Failed) != 0 {
			t.Fatalf("decision %+v: want served by the good gateway, no failed attempt", d)
		}
	})
}

// With racing off, a response-head timeout through a gateway that has
// answered nothing since it was configured is the gateway's failure (every
// host), and through one that has answered it is the host's (SPEC CD-1).
func TestSilentGatewayTier(t *testing.T) {
	origin, _, _ := countingOrigin(t)
	cfg := func(gw *testworld.Gateway) Config {
		return Config{Candidates: []candidate.Candidate{selCand(t, gw.URL), candidate.Direct},
			ResponseTimeout: 200 * time.Millisecond, Cooldown: time.Minute}
	}
	t.Run("CD-1/head-timeout-on-an-unproven-gateway-cools-it-for-every-host", func(t *testing.T) {
		gw := testworld.NewGateway(t)
		gw.SetMode(testworld.ModeBlackhole)
		addr, e := selProxy(t, cfg(gw))
		if code, _, _ := plainVia(t, addr, "GET", origin.Addr, ""); code != 200 {
			t.Fatalf("GET: %d", code)
		}
		c := e.Status().Candidates[0]
		if c.State != statusdoc.StateCooling || c.LastFailure == nil || c.LastFailure.Tier != "gateway" || c.LastFailure.Phase != "response-header" {
			t.Fatalf("candidate %+v: want a gateway-wide cooldown from a response-header timeout", c)
		}
	})
	t.Run("CD-1/head-timeout-on-a-gateway-that-answered-cools-it-for-that-host", func(t *testing.T) {
		gw := testworld.NewGateway(t)
		addr, e := selProxy(t, cfg(gw))
		if code, _, _ := plainVia(t, addr, "GET", origin.Addr, ""); code != 200 || gw.Requests() != 1 {
			t.Fatalf("GET: %d, gateway forwarded %d", code, gw.Requests())
		}
		e.cache.RemoveIf(originHost(origin), selCand(t, gw.URL).Key()) // the next request starts at the gateway again, uncached
		gw.SetMode(testworld.ModeBlackhole)
		if code, _, _ := plainVia(t, addr, "GET", origin.Addr, ""); code != 200 {
			t.Fatalf("GET after the gateway went silent: %d", code)
		}
		c := e.Status().Candidates[0]
		if c.State != statusdoc.StateHot || c.LastFailure == nil || c.LastFailure.Tier != "host" || len(c.HostCooldowns) != 1 {
			t.Fatalf("candidate %+v: want a host-scoped cooldown only", c)
		}
	})
}

// originHost is the host part of o's address.
func originHost(o *testworld.Origin) string {
	h, _, _ := net.SplitHostPort(o.Addr)
	return h
}
