package engine

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// TestOpenOnly covers plans with one candidate (loopback direct, or one
// path configured): the attempt runs on the calling goroutine (no
// per-attempt goroutine, channel or timer per new tunnel) and keeps the
// race's bookkeeping (SPEC ORD-6, CD-1, CON-1).
func TestOpenOnly(t *testing.T) {
	gw := candidate.Candidate{Kind: candidate.KindHTTP, Addr: "127.0.0.1:1"}
	engine := func(t *testing.T, open openFunc) *Engine {
		t.Helper()
		e, err := New(Config{Candidates: []candidate.Candidate{gw}, TLSProbe: true, Cooldown: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		e.openAttempt = open
		return e
	}

	t.Run("ORD-6/single-candidate-opens-on-the-calling-goroutine-without-probe", func(t *testing.T) {
		c1, c2 := net.Pipe()
		defer c2.Close()
		var stack string
		probed := true
		e := engine(t, func(_ context.Context, _ attempt, _, _ string, probe bool) (net.Conn, error) {
			buf := make([]byte, 16<<10)
			stack, probed = string(buf[:runtime.Stack(buf, false)]), probe
			return c1, nil
		})
		conn, cand, err := e.Open(context.Background(), "a.test", 443)
		if err != nil || conn != c1 || cand.Key() != gw.Key() {
			t.Fatalf("Open: %v %v %v", conn, cand, err)
		}
		if !strings.Contains(stack, "engine.(*Engine).Open(") {
			t.Fatalf("the only attempt ran on another goroutine:\n%s", stack)
		}
		if probed {
			t.Fatal("CON-1: a TLS probe ran although no other candidate could take over")
		}
		if d := proxytest.LastDecision(t, e); d.Candidate != gw.String() || len(d.Failed) != 0 {
			t.Fatalf("decision %+v", d)
		}
	})

	t.Run("CD-1/single-candidate-failure-cools-down-and-reports-all-failed", func(t *testing.T) {
		e := engine(t, func(_ context.Context, a attempt, _, _ string, _ bool) (net.Conn, error) {
			return nil, &candidate.PathError{Candidate: a.cand, Phase: candidate.PhaseConnectResponse, Tier: candidate.TierHost, Status: 403, Err: errors.New("403 Forbidden")}
		})
		_, _, err := e.Open(context.Background(), "a.test", 443)
		var af *AllFailedError
		if !errors.As(err, &af) || len(af.Errs) != 1 {
			t.Fatalf("Open: %v, want *AllFailedError with one failure", err)
		}
		if !e.cooldowns.Cooling(gw.Key(), "a.test:443") {
			t.Fatal("the failed candidate is not cooling for a.test:443")
		}
		if d := proxytest.LastDecision(t, e); d.Candidate != "" || len(d.Failed) != 1 || d.Error != "all candidates failed" {
			t.Fatalf("decision %+v", d)
		}
	})

	t.Run("ORD-6/single-candidate-cancelled-records-no-cooldown", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		e := engine(t, func(ctx context.Context, a attempt, _, _ string, _ bool) (net.Conn, error) {
			cancel() // the client left, or Server.Shutdown
			return nil, &candidate.PathError{Candidate: a.cand, Phase: candidate.PhaseGatewayConnect, Tier: candidate.TierGateway, Err: ctx.Err()}
		})
		if _, _, err := e.Open(ctx, "a.test", 443); err == nil {
			t.Fatal("Open succeeded")
		}
		if e.cooldowns.Cooling(gw.Key(), "a.test:443") {
			t.Fatal("an attempt ended by its context was put in cooldown")
		}
	})

	t.Run("CD-1/single-candidate-out-of-descriptors-blames-nobody", func(t *testing.T) {
		local := &candidate.PathError{Candidate: gw, Phase: candidate.PhaseLocal, Tier: candidate.TierNone, Err: syscall.EMFILE}
		e := engine(t, func(context.Context, attempt, string, string, bool) (net.Conn, error) { return nil, local })
		_, _, err := e.Open(context.Background(), "a.test", 443)
		if err != error(local) {
			t.Fatalf("Open: %v, want the PhaseLocal error itself", err)
		}
		if e.cooldowns.Cooling(gw.Key(), "a.test:443") {
			t.Fatal("a local resource failure was put in cooldown")
		}
	})
}
