package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
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
	e, err := NewEngine(Config{Candidates: []candidate.Candidate{candidate.Direct}, LoopbackDirect: true, ResponseTimeout: 300 * time.Millisecond})
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
