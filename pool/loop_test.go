package pool

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// countingPool serves a pool created after its URL is known and counts the
// calls reaching it.
type countingPool struct {
	h     http.Handler
	calls atomic.Int32
}

func (c *countingPool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.calls.Add(1)
	c.h.ServeHTTP(w, r)
}

// loopPool serves pool p with members (name → base URL) on a new server.
func loopPool(t *testing.T, srv *httptest.Server, cp *countingPool, members [][2]string) {
	t.Helper()
	var y, names strings.Builder
	y.WriteString("channels:\n")
	for i, m := range members {
		fmt.Fprintf(&y, "  %s: {api: anthropic, base_url: %q, api_key: sk-%s}\n", m[0], m[1], m[0])
		if i > 0 {
			names.WriteString(", ")
		}
		names.WriteString(m[0])
	}
	fmt.Fprintf(&y, "pools:\n  p: {strategy: failover, members: [%s]}\n", names.String())
	cfg, err := config.ParseConfig([]byte(y.String()), func(string) string { return "" })
	if err != nil {
		t.Fatalf("%v\n%s", err, y.String())
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cp.h = New(cfg, Options{Transport: tr, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// TestPoolLoop: a member whose base_url leads back to the pool — its own
// listener, or another instance pointing back — is one 508 and a failover,
// not a chain of nested calls (before: about 7,000 nested calls a second
// until the outermost timeout). SPEC POOL-10.
func TestPoolLoop(t *testing.T) {
	call := func(t *testing.T, url string) (int, string) {
		resp, err := http.Post(url+"/pool/p/v1/messages", "application/json", strings.NewReader(msgBody("m", false)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	t.Run("POOL-10/member-leading-back-to-its-own-pool-fails-over-once", func(t *testing.T) {
		good := newMock(t, "b", okAnswer("b"))
		cp := &countingPool{}
		srv := httptest.NewServer(cp)
		defer srv.Close()
		loopPool(t, srv, cp, [][2]string{{"self", srv.URL + "/pool/p"}, {"b", good.srv.URL}})
		if st, body := call(t, srv.URL); st != 200 || !strings.Contains(body, "msg_b") {
			t.Fatalf("%d %.300s", st, body)
		}
		if n := cp.calls.Load(); n != 2 {
			t.Fatalf("the pool served %d calls for one client call, want 2 (the call and its one looped attempt)", n)
		}
	})
	t.Run("POOL-10/two-instances-pointing-at-each-other-508", func(t *testing.T) {
		a, b := &countingPool{}, &countingPool{}
		sa, sb := httptest.NewServer(a), httptest.NewServer(b)
		defer sa.Close()
		defer sb.Close()
		loopPool(t, sa, a, [][2]string{{"tob", sb.URL + "/pool/p"}})
		loopPool(t, sb, b, [][2]string{{"toa", sa.URL + "/pool/p"}})
		if st, body := call(t, sa.URL); st != http.StatusLoopDetected {
			t.Fatalf("%d %.300s", st, body)
		}
		if na, nb := a.calls.Load(), b.calls.Load(); na != 2 || nb != 1 {
			t.Fatalf("calls: a %d, b %d; want 2 and 1", na, nb)
		}
	})
}
