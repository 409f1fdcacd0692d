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
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// plainVia sends "METHOD http://host/path" with body through the proxy at
// addr on a fresh connection and returns the status, body and how long the
// answer took.
func plainVia(t *testing.T, addr, method, host, body string) (int, string, time.Duration) {
	t.Helper()
	c := proxytest.Dial(t, addr)
	start := time.Now()
	fmt.Fprintf(c, "%s http://%s/x HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", method, host, host, len(body), body)
	resp, got := proxytest.ReadResponse(t, bufio.NewReader(c), method)
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
	cfg := func(silent, good *testworld.Gateway) engine.Config {
		return engine.Config{Candidates: proxytest.Gateways(t, false, silent.URL, good.URL), RaceDelay: 250 * time.Millisecond,
			ResponseTimeout: time.Minute, Cooldown: time.Minute}
	}

	t.Run("ORD-6/plain-get-through-silent-then-good-answers-within-1s", func(t *testing.T) {
		origin, gets, _ := countingOrigin(t)
		silent, good := silentAndGood(t, origin, "one.test")
		addr, _ := proxytest.Start(t, proxy.New, cfg(silent, good))
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
		addr, _ := proxytest.Start(t, proxy.New, cfg(silent, good))
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
		silentAddr := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			if l, err := bufio.NewReader(c).ReadString('\n'); err == nil {
				mu.Lock()
				lines = append(lines, strings.TrimSpace(l))
				mu.Unlock()
			}
			io.Copy(io.Discard, c)
		})
		addr, _ := proxytest.Start(t, proxy.New, engine.Config{Candidates: proxytest.Gateways(t, false, "http://"+silentAddr, good.URL), RaceDelay: 250 * time.Millisecond,
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
		silent := testworld.NewSilentGateway(t)
		good := testworld.NewGateway(t, testworld.WithRoute("loser.test:80", origin.Addr))
		c1 := proxytest.Gateway(t, "http://"+silent.Addr)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c1, proxytest.Gateway(t, good.URL)},
			RaceDelay: 50 * time.Millisecond, ResponseTimeout: time.Minute, Cooldown: time.Minute})
		if code, _, _ := plainVia(t, addr, "GET", "loser.test", ""); code != 200 {
			t.Fatalf("GET: %d", code)
		}
		testkit.WaitFor(t, 2*time.Second, "the loser's connection closed", func() bool { return silent.Open() == 0 })
		if e.Cooldowns().Cooling(c1.Key(), "loser.test:80") {
			t.Fatal("the race's loser was put in cooldown")
		}
		if d := proxytest.LastDecision(t, e); d.Candidate != good.URL || len(d.Failed) != 0 {
			t.Fatalf("decision %+v: want served by the good gateway, no failed attempt", d)
		}
	})
}

// With racing off, a response-head timeout through a gateway that has
// answered nothing since it was configured is the gateway's failure (every
// host), and through one that has answered it is the host's (SPEC CD-1).
func TestSilentGatewayTier(t *testing.T) {
	origin, _, _ := countingOrigin(t)
	cfg := func(gw *testworld.Gateway) engine.Config {
		return engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, gw.URL), candidate.Direct},
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
		e.Cache().RemoveIf(originHost(origin), proxytest.Gateway(t, gw.URL).Key()) // the next request starts at the gateway again, uncached
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

// A gateway the per-host cache holds for a host and that then goes silent
// (accepts TCP, never answers) costs a request that may be sent twice about
// twice the race delay, not the response timeout: with no head after the
// race delay the cached path is proved (one CONNECT to the request's host
// and port through it), and when that proof gets no answer within another
// race delay the next candidate gets the request too. A cached path that
// answers the proof is alive, so the slow head is the origin's and the
// request is not sent twice; a request that may not be sent twice keeps its
// rules (SPEC ORD-6, ORD-4, HTTP-3).
func TestSilentCachedGatewayPlain(t *testing.T) {
	cfg := func(first, second *testworld.Gateway, respTimeout time.Duration) engine.Config {
		return engine.Config{Candidates: proxytest.Gateways(t, false, first.URL, second.URL), RaceDelay: 250 * time.Millisecond,
			ResponseTimeout: respTimeout, Cooldown: time.Minute}
	}
	t.Run("ORD-6/cached-gateway-gone-silent-get-answers-within-2s", func(t *testing.T) {
		origin, gets, _ := countingOrigin(t)
		first := testworld.NewGateway(t, testworld.WithRoute("cached.test:80", origin.Addr))
		second := testworld.NewGateway(t, testworld.WithRoute("cached.test:80", origin.Addr))
		addr, e := selProxy(t, cfg(first, second, 30*time.Second))
		if code, _, _ := plainVia(t, addr, "GET", "cached.test", ""); code != 200 || first.Requests() != 1 {
			t.Fatalf("first GET: %d, first gateway forwarded %d", code, first.Requests())
		}
		if k, _ := e.Cache().Get("cached.test"); k != proxytest.Gateway(t, first.URL).Key() {
			t.Fatalf("cache entry %q, want the first gateway", k)
		}
		first.SetMode(testworld.ModeBlackhole)
		code, body, took := plainVia(t, addr, "GET", "cached.test", "")
		if code != 200 || body != "ok" {
			t.Fatalf("answer %d %q", code, body)
		}
		// The response timeout is 30 s: only the race answers this soon.
		if took > 2*time.Second {
			t.Fatalf("GET through a cached gateway gone silent took %v", took)
		}
		t.Logf("GET through a cached gateway gone silent answered in %v", took)
		if second.Requests() != 1 || gets.Load() != 2 {
			t.Fatalf("second gateway forwarded %d, origin got %d GETs", second.Requests(), gets.Load())
		}
		if k, _ := e.Cache().Get("cached.test"); k != proxytest.Gateway(t, second.URL).Key() {
			t.Fatalf("cache entry %q after the race, want the second gateway", k)
		}
	})
	t.Run("ORD-4/slow-origin-behind-a-cached-gateway-is-sent-once", func(t *testing.T) {
		var gets atomic.Int32
		release := make(chan struct{})
		var once sync.Once
		letGo := func() { once.Do(func() { close(release) }) }
		origin := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if gets.Add(1) == 2 {
				<-release // the second GET's head waits well past two race delays
			}
			io.WriteString(w, "ok")
		}))
		t.Cleanup(letGo) // before the origin's own cleanup waits for its handlers
		first := testworld.NewGateway(t, testworld.WithRoute("slow.test:80", origin.Addr))
		second := testworld.NewGateway(t, testworld.WithRoute("slow.test:80", origin.Addr))
		addr, _ := selProxy(t, cfg(first, second, 30*time.Second))
		if code, _, _ := plainVia(t, addr, "GET", "slow.test", ""); code != 200 {
			t.Fatalf("first GET: %d", code)
		}
		done := make(chan int, 1)
		go func() {
			code, _, _ := plainVia(t, addr, "GET", "slow.test", "")
			done <- code
		}()
		// The proof reaches the cached gateway as a CONNECT; then the head
		// is let go long after the race delays passed.
		testkit.WaitFor(t, 5*time.Second, "the cached gateway proved", func() bool { return first.Connects() >= 1 })
		time.AfterFunc(time.Second, letGo)
		if code := <-done; code != 200 {
			t.Fatalf("second GET: %d", code)
		}
		if gets.Load() != 2 || second.Requests() != 0 {
			t.Fatalf("origin got %d GETs, the second gateway forwarded %d: a slow origin behind a live cached gateway was sent the GET twice", gets.Load(), second.Requests())
		}
	})
	t.Run("HTTP-3/post-through-a-cached-gateway-gone-silent-is-sent-once", func(t *testing.T) {
		origin, _, posts := countingOrigin(t)
		first := testworld.NewGateway(t, testworld.WithRoute("post.test:80", origin.Addr))
		second := testworld.NewGateway(t, testworld.WithRoute("post.test:80", origin.Addr))
		addr, _ := selProxy(t, cfg(first, second, time.Second))
		if code, _, _ := plainVia(t, addr, "POST", "post.test", "a"); code != 200 {
			t.Fatalf("first POST: %d", code)
		}
		first.SetMode(testworld.ModeBlackhole)
		if code, _, _ := plainVia(t, addr, "POST", "post.test", "b"); code < 500 {
			t.Fatalf("second POST: %d, want the gateway's silence reported", code)
		}
		if posts.Load() != 1 || second.Requests() != 0 {
			t.Fatalf("origin got %d POSTs, second gateway forwarded %d: a POST that reached a path was sent again", posts.Load(), second.Requests())
		}
	})
}
