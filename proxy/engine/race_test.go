package engine_test

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

// TestRace covers staggered racing (SPEC ORD-6): a silent first gateway
// costs about RaceDelay, the first open path wins, losers are closed.
func TestRace(t *testing.T) {
	t.Run("ORD-6/silent-first-gateway-loses-to-second-well-under-a-second", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		silent := testworld.NewSilentGateway(t)
		gw2 := testworld.NewGateway(t)
		cs, c2 := proxytest.Gateway(t, "http://"+silent.Addr), proxytest.Gateway(t, gw2.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{cs, c2},
			ConnectTimeout: 5 * time.Second, RaceDelay: 250 * time.Millisecond, Cooldown: time.Minute})
		start := time.Now()
		status, c, br := proxytest.Connect(t, addr, origin.Addr, "")
		took := time.Since(start)
		if status != 200 {
			t.Fatalf("CONNECT: %d", status)
		}
		if took >= time.Second {
			t.Fatalf("took %v with a 250 ms race delay", took)
		}
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
		if _, body := proxytest.ReadResponse(t, br, "GET"); body != origin.Greeting() {
			t.Fatalf("body %q", body)
		}
		if silent.Accepted() != 1 {
			t.Fatalf("silent gateway accepted %d connections, want 1", silent.Accepted())
		}
		testkit.WaitFor(t, 2*time.Second, "the losing connection to be closed", func() bool { return silent.Open() == 0 })
		d := proxytest.LastDecision(t, e)
		if d.Candidate != c2.String() || len(d.Failed) != 0 {
			t.Fatalf("decision %+v: want gw2, and no failure recorded for the cancelled loser", d)
		}
		if e.Cooldowns().Cooling(cs.Key(), origin.Addr) {
			t.Fatal("a loser cancelled by the win was put in cooldown")
		}
	})

	t.Run("ORD-6/race-with-tls-probe-closes-every-loser", func(t *testing.T) {
		origin := testworld.NewTLSOrigin(t)
		silent := testworld.NewSilentGateway(t)
		gw2 := testworld.NewGateway(t, testworld.WithRoute("a.test:443", origin.Addr))
		cs, c2 := proxytest.Gateway(t, "http://"+silent.Addr), proxytest.Gateway(t, gw2.URL)
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{cs, c2}, TLSProbe: true,
			ConnectTimeout: 5 * time.Second, RaceDelay: 250 * time.Millisecond})
		start := time.Now()
		status, c, _ := proxytest.Connect(t, addr, "a.test:443", "")
		if took := time.Since(start); status != 200 || took >= time.Second {
			t.Fatalf("CONNECT: %d after %v", status, took)
		}
		if body := selTLSGet(t, c, origin.CertPool); body != origin.Greeting() {
			t.Fatalf("body %q", body)
		}
		testkit.WaitFor(t, 2*time.Second, "the silent gateway's connections to be closed", func() bool { return silent.Open() == 0 })
		if e.TLSProbes() != 2 {
			t.Fatalf("TLS probes %d, want 2 (one per raced candidate)", e.TLSProbes())
		}
		if got := e.Cache().Snapshot(); len(got) != 1 || got[0].Key != c2.Key() {
			t.Fatalf("cache %+v", got)
		}
	})

	t.Run("ORD-6/loser-whose-path-opens-after-the-win-is-closed", func(t *testing.T) {
		c1, c2 := proxytest.Gateway(t, "http://127.0.0.1:1"), proxytest.Gateway(t, "http://127.0.0.1:2")
		e, err := engine.New(engine.Config{Candidates: []candidate.Candidate{c1, c2}, RaceDelay: 10 * time.Millisecond, Cooldown: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		late1, late2 := net.Pipe()
		win1, win2 := net.Pipe()
		defer late2.Close()
		defer win2.Close()
		e.SetOpenAttempt(func(ctx context.Context, a engine.Attempt, _, _ string, _ bool) (net.Conn, error) {
			if a.Cand().Key() == c1.Key() {
				<-ctx.Done() // cancelled by the win; the path "opens" anyway
				return late1, nil
			}
			return win1, nil
		})
		conn, cand, err := e.Open(context.Background(), "x.test", 80)
		if err != nil || cand.Key() != c2.Key() || conn != win1 {
			t.Fatalf("openTunnel: %v %v, want the second candidate's path", cand, err)
		}
		// The late loser was closed before openTunnel returned: its peer
		// reads EOF at once.
		late2.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := late2.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("late loser's path still open: read %v", err)
		}
		if d := proxytest.LastDecision(t, e); len(d.Failed) != 0 || d.Candidate != c2.String() {
			t.Fatalf("decision %+v", d)
		}
	})

	t.Run("ORD-6/no-attempt-starts-while-losers-drain", func(t *testing.T) {
		c1, c2, c3 := proxytest.Gateway(t, "http://127.0.0.1:1"), proxytest.Gateway(t, "http://127.0.0.1:2"), proxytest.Gateway(t, "http://127.0.0.1:3")
		e, err := engine.New(engine.Config{Candidates: []candidate.Candidate{c1, c2, c3}, RaceDelay: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		win1, win2 := net.Pipe()
		defer win2.Close()
		var third atomic.Bool
		e.SetOpenAttempt(func(ctx context.Context, a engine.Attempt, _, _ string, _ bool) (net.Conn, error) {
			switch a.Cand().Key() {
			case c1.Key():
				<-ctx.Done()
				// A slow loser: the race timer (10 ms) fires many times
				// while openTunnel drains it.
				<-time.After(200 * time.Millisecond)
				return nil, ctx.Err()
			case c2.Key():
				return win1, nil
			}
			third.Store(true)
			return nil, errors.New("third attempt started after the win")
		})
		if _, cand, err := e.Open(context.Background(), "x.test", 80); err != nil || cand.Key() != c2.Key() {
			t.Fatalf("openTunnel: %v %v", cand, err)
		}
		if third.Load() {
			t.Fatal("an attempt started after the win")
		}
	})

	t.Run("ORD-6/close-answers-leave-exactly-one-path-open", func(t *testing.T) {
		// gw1 answers at 250 ms, just when gw2 starts and answers at once:
		// either may win; the other must be cancelled, or closed when its
		// path opened after the win.
		for i := 0; i < 5; i++ {
			g1 := testworld.NewAnsweringGateway(t, 250*time.Millisecond)
			g2 := testworld.NewAnsweringGateway(t, 0)
			addr, _ := selProxy(t, engine.Config{Candidates: []candidate.Candidate{proxytest.Gateway(t, "http://"+g1.Addr), proxytest.Gateway(t, "http://"+g2.Addr)},
				RaceDelay: 250 * time.Millisecond})
			status, c, _ := proxytest.Connect(t, addr, "x.test:80", "")
			if status != 200 {
				t.Fatalf("round %d: CONNECT %d", i, status)
			}
			testkit.WaitFor(t, 2*time.Second, "one open path (the tunnel)", func() bool { return g1.Open()+g2.Open() == 1 })
			c.Close()
			testkit.WaitFor(t, 2*time.Second, "no open path after the client left", func() bool { return g1.Open()+g2.Open() == 0 })
		}
	})

	t.Run("ORD-6/failure-starts-next-at-once-and-nothing-starts-after-win", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw1, gw2, gw3 := testworld.NewGateway(t), testworld.NewGateway(t), testworld.NewGateway(t)
		gw1.SetMode(testworld.ModeStatus(403))
		c1, c2, c3 := proxytest.Gateway(t, gw1.URL), proxytest.Gateway(t, gw2.URL), proxytest.Gateway(t, gw3.URL)
		// A long race delay: the second attempt must start on the first's
		// failure, not on the timer.
		addr, e := selProxy(t, engine.Config{Candidates: []candidate.Candidate{c1, c2, c3}, RaceDelay: 3 * time.Second})
		start := time.Now()
		status, _, _ := proxytest.Connect(t, addr, origin.Addr, "")
		if took := time.Since(start); status != 200 || took >= 2*time.Second {
			t.Fatalf("CONNECT: %d after %v", status, took)
		}
		if d := proxytest.LastDecision(t, e); d.Candidate != c2.String() || !slices.Equal(selPhases(d), []string{c1.String() + " connect-response"}) {
			t.Fatalf("decision %+v", d)
		}
		if gw3.Accepted() != 0 {
			t.Fatalf("gw3 was started after the win (%d connections)", gw3.Accepted())
		}
	})

	t.Run("ORD-6/all-silent-fails-after-connect-timeout-and-closes-all", func(t *testing.T) {
		s1, s2 := testworld.NewSilentGateway(t), testworld.NewSilentGateway(t)
		addr, e := selProxy(t, engine.Config{
			Candidates:     []candidate.Candidate{proxytest.Gateway(t, "http://"+s1.Addr), proxytest.Gateway(t, "http://"+s2.Addr)},
			ConnectTimeout: 400 * time.Millisecond, RaceDelay: 100 * time.Millisecond})
		status, _, _ := proxytest.Connect(t, addr, "127.0.0.1:9", "")
		if status != 502 {
			t.Fatalf("CONNECT: %d, want 502", status)
		}
		if d := proxytest.LastDecision(t, e); len(d.Failed) != 2 || d.Candidate != "" {
			t.Fatalf("decision %+v", d)
		}
		testkit.WaitFor(t, 2*time.Second, "every silent connection closed", func() bool { return s1.Open() == 0 && s2.Open() == 0 })
	})

	t.Run("ORD-6/cancel-ends-every-attempt-without-cooldown", func(t *testing.T) {
		s1, s2 := testworld.NewSilentGateway(t), testworld.NewSilentGateway(t)
		c1, c2 := proxytest.Gateway(t, "http://"+s1.Addr), proxytest.Gateway(t, "http://"+s2.Addr)
		e, err := engine.New(engine.Config{Candidates: []candidate.Candidate{c1, c2},
			ConnectTimeout: 5 * time.Second, RaceDelay: 50 * time.Millisecond, Cooldown: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, _, err := e.Open(ctx, "x.test", 80)
			done <- err
		}()
		testkit.WaitFor(t, 2*time.Second, "both attempts started", func() bool { return s1.Accepted() == 1 && s2.Accepted() == 1 })
		cancel() // the client left, or Server.Shutdown
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("openTunnel succeeded through silent gateways")
			}
		case <-time.After(2 * time.Second):
			t.Fatal("openTunnel did not return after cancel")
		}
		if e.Cooldowns().Cooling(c1.Key(), "x.test:80") || e.Cooldowns().Cooling(c2.Key(), "x.test:80") {
			t.Fatal("a cancelled attempt was put in cooldown")
		}
		testkit.WaitFor(t, 2*time.Second, "every silent connection closed", func() bool { return s1.Open() == 0 && s2.Open() == 0 })
	})
}
