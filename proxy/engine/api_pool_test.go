package engine_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

// TestPoolRoundTripper: the Transport the model pool gets (SPEC POOL-17)
// waits as long as the request's context allows, not --response-timeout-ms,
// and reuses keep-alive connections for POSTs to http:// origins.
func TestPoolRoundTripper(t *testing.T) {
	var conns atomic.Int64
	var posts atomic.Int64
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		posts.Add(1)
		if r.URL.Path == "/slow" {
			time.Sleep(time.Second) // the answer itself is late (not synchronisation)
		}
		io.WriteString(w, "ok")
	}))
	origin.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	origin.Start()
	t.Cleanup(origin.Close)
	e, err := engine.New(engine.Config{Candidates: []candidate.Candidate{candidate.Direct}, LoopbackDirect: true, ResponseTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	post := func(tr http.RoundTripper, p string) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, origin.URL+p, strings.NewReader(`{"model":"m"}`))
		resp, err := tr.RoundTrip(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	t.Run("POOL-17/caller-context-governs-not-response-timeout", func(t *testing.T) {
		if _, err := post(e.RoundTripper(), "/slow"); err == nil {
			t.Fatal("the plain Transport waited past --response-timeout-ms")
		}
		resp, err := post(e.PoolRoundTripper(), "/slow")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("pool Transport: %v", err)
		}
	})
	t.Run("POOL-17/posts-reuse-keep-alive-connections", func(t *testing.T) {
		tr := e.PoolRoundTripper()
		before, sent := conns.Load(), posts.Load()
		for i := 0; i < 50; i++ {
			if resp, err := post(tr, "/fast"); err != nil || resp.StatusCode != 200 {
				t.Fatalf("post %d: %v", i, err)
			}
		}
		if n := conns.Load() - before; n > 2 {
			t.Fatalf("50 POSTs opened %d connections", n)
		}
		if n := posts.Load() - sent; n != 50 {
			t.Fatalf("origin saw %d POSTs, want 50", n)
		}
	})
}

// TestPoolCallerLogs: a member call of the model pool that no candidate
// can carry is the pool's to report (its "pool member failed" line, then
// its failover, SPEC POOL-7, OPS-1): the engine logs no "no candidate
// left" warning and no info-level "routed" line for it, over http:// and
// over an https:// tunnel, and its decision carries caller "pool"; the
// proxy's other users still get the warning.
func TestPoolCallerLogs(t *testing.T) {
	var logs testkit.LogBuffer
	_, srv := proxytest.Start(t, proxy.New, engine.Config{Candidates: []candidate.Candidate{candidate.Direct}, LoopbackDirect: true, Logger: logs.Logger()})
	e := srv.Engine()
	dead := testworld.RefusedAddr(t)
	call := func(t *testing.T, tr http.RoundTripper, scheme string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, scheme+"://"+dead+"/v1/messages", strings.NewReader(`{"model":"m"}`))
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
			t.Fatalf("%s call to a refused port answered %d", scheme, resp.StatusCode)
		}
	}
	warned := func() bool { return strings.Contains(logs.String(), `level=WARN msg="no candidate left"`) }
	for _, scheme := range []string{"http", "https"} {
		t.Run("OPS-1/pool-member-unreachable-is-not-no-candidate-left/"+scheme, func(t *testing.T) {
			before := len(e.DecisionLog().Snapshot())
			call(t, e.PoolRoundTripper(), scheme)
			if warned() || strings.Contains(logs.String(), "level=INFO msg=routed") {
				t.Fatalf("the pool's member call logged as an outage:\n%s", logs.String())
			}
			if !strings.Contains(logs.String(), `level=DEBUG msg="no candidate left"`) {
				t.Fatalf("no debug line for the failed member call:\n%s", logs.String())
			}
			ds := e.DecisionLog().Snapshot()
			if len(ds) != before+1 || ds[len(ds)-1].Caller != "pool" || ds[len(ds)-1].Error == "" {
				t.Fatalf("decisions %+v: want one more, failed, with caller pool", ds)
			}
		})
	}
	t.Run("OPS-1/other-callers-still-warned", func(t *testing.T) {
		call(t, e.RoundTripper(), "http")
		if !warned() {
			t.Fatalf("a plain Transport's request no candidate served logged no warning:\n%s", logs.String())
		}
	})
}
