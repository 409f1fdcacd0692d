package statusview

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// TestPoolVerdictAfterAllFailed: a pool whose members all failed its
// latest call does not keep saying it serves via the member that answered
// the call before (SPEC OPS-2, POOL-13), and the pool's error names each
// attempt's class without a status it never got (POOL-11).
func TestPoolVerdictAfterAllFailed(t *testing.T) {
	up := &mockllm.Channel{API: mockllm.Anthropic, FailFrom: 2, FailStatus: 500}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // refuses connections: a network failure
	y := fmt.Sprintf("channels:\n  up: {api: anthropic, base_url: %q, api_key: sk-up}\n  dead: {api: anthropic, base_url: %q, api_key: sk-dead}\n"+
		"pools:\n  p:\n    strategy: failover\n    members: [up, dead]\n", upSrv.URL, deadURL)
	cfg, err := config.ParseConfig([]byte(y), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	srv := httptest.NewServer(pool.New(cfg, pool.Options{Transport: tr}))
	t.Cleanup(srv.Close)
	call := func(t *testing.T) (int, string) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/pool/p/v1/messages", "application/json",
			strings.NewReader(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	verdict := func(t *testing.T) string {
		t.Helper()
		resp, err := http.Get(srv.URL + "/pool/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc PoolDoc
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || len(doc.Pools) != 1 {
			t.Fatalf("status document: %v", err)
		}
		return PoolVerdict(doc.Pools[0], doc.Recent, time.Now(), time.UTC)
	}
	if code, body := call(t); code != 200 {
		t.Fatalf("first call: %d %s", code, body)
	}
	if v := verdict(t); !strings.HasPrefix(v, "pool p: serving via up") {
		t.Fatalf("after a served call: %s", v)
	}
	t.Run("POOL-11/all-failed-error-names-no-status-it-never-got", func(t *testing.T) {
		code, body := call(t)
		if code != 500 || !strings.Contains(body, "all 2 attempted members failed: up: server (500); dead: network\"") || strings.Contains(body, "(0)") {
			t.Fatalf("all-failed call: %d %s", code, body)
		}
	})
	t.Run("OPS-2/pool-verdict-says-the-last-call-failed-on-every-member", func(t *testing.T) {
		v := verdict(t)
		if !strings.HasPrefix(v, "pool p: the last call (") || !strings.Contains(v, ") failed on every member tried, the last with network error (network); last answered via up at ") ||
			strings.Contains(v, "serving via") {
			t.Fatalf("after every member failed: %s", v)
		}
	})
	t.Run("OPS-2/pool-verdict-serves-again-after-an-answer", func(t *testing.T) {
		up.FailFrom = 0 // the mock answers again; both members still cool down, so the pool tries them all (POOL-10)
		if code, body := call(t); code != 200 {
			t.Fatalf("third call: %d %s", code, body)
		}
		if v := verdict(t); !strings.HasPrefix(v, "pool p: serving via up") {
			t.Fatalf("after an answer: %s", v)
		}
	})
}
