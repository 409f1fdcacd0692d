package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// poolApp runs a dual-proxy app holding only poolCommand (the lead wires it
// into DualProxy).
func poolApp(args []string, sio IO) int {
	app := &cli.App{Name: "dual-proxy", Writer: sio.Stdout, ErrWriter: sio.Stderr, Commands: []*cli.Command{poolCommand(sio)}}
	return runApp(app, append([]string{"dual-proxy"}, args...), sio)
}

// poolInstance serves a pool "p" (token "tok") over one Anthropic-style
// upstream that answers a short stream, or 529 when overloaded is true.
func poolInstance(t *testing.T, overloaded bool) string {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if overloaded {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(529)
			fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"m","content":[],"usage":{"input_tokens":3}}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`,
			`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
		} {
			fmt.Fprint(w, ev+"\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(up.Close)
	cfg, err := config.ParseConfig([]byte(fmt.Sprintf("channels:\n  up: {api: anthropic, base_url: %q, api_key: sk-SECRET-1}\npools:\n  p: {members: [up]}\n", up.URL)), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	srv := httptest.NewServer(pool.New(cfg, pool.Options{Token: "tok", Transport: tr}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestPoolTestCommand(t *testing.T) {
	t.Run("POOL-14/pool-test-prints-member-ttft-result", func(t *testing.T) {
		addr := poolInstance(t, false)
		out, errOut, status := runCmd(t, poolApp, nil, "pool", "test", "p", "m", "--addr", addr, "--token", "tok")
		if status != 0 || !strings.Contains(out, "result    ok") || !strings.Contains(out, "member    up") || !strings.Contains(out, "attempts  1") {
			t.Fatalf("status %d out %q err %q", status, out, errOut)
		}
		if !strings.Contains(out, "ttft") || strings.Contains(out, "ttft      -") {
			t.Fatalf("no ttft: %q", out)
		}
	})
	t.Run("POOL-14/pool-test-json-and-flags-first", func(t *testing.T) {
		addr := poolInstance(t, false)
		out, _, status := runCmd(t, poolApp, nil, "pool", "test", "--json", "--addr="+addr, "--token=tok", "p", "m")
		var res pool.TestResult
		if status != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Member != "up" || res.Result != "ok" {
			t.Fatalf("status %d out %q", status, out)
		}
	})
	t.Run("POOL-14/pool-test-failure-exits-1-with-class", func(t *testing.T) {
		addr := poolInstance(t, true)
		out, _, status := runCmd(t, poolApp, nil, "pool", "test", "p", "m", "--addr", addr, "--token", "tok")
		if status != 1 || !strings.Contains(out, "failed (server)") || !strings.Contains(out, "up: server 529 Overloaded") || strings.Contains(out, "SECRET") {
			t.Fatalf("status %d out %q", status, out)
		}
	})
	t.Run("POOL-20/pool-test-without-token-exits-1-naming-401", func(t *testing.T) {
		addr := poolInstance(t, false)
		_, errOut, status := runCmd(t, poolApp, nil, "pool", "test", "p", "m", "--addr", addr)
		if status != 1 || !strings.Contains(errOut, "401 missing or wrong pool token") {
			t.Fatalf("status %d err %q", status, errOut)
		}
	})
	t.Run("LIS-5/pool-test-usage-errors-exit-2", func(t *testing.T) {
		for _, args := range [][]string{{"pool", "test", "p"}, {"pool", "test", "p", "m", "--bogus"}, {"pool", "test", "p", "m", "--addr"}, {"pool", "test", "p", "m", "--addr", "nope"}} {
			if _, errOut, status := runCmd(t, poolApp, nil, args...); status != 2 || strings.Count(errOut, "\n") != 1 {
				t.Errorf("%v: status %d err %q", args, status, errOut)
			}
		}
	})
	t.Run("POOL-14/pool-test-unreachable-exits-1", func(t *testing.T) {
		addr := poolInstance(t, false)
		_, errOut, status := runCmd(t, poolApp, nil, "pool", "test", "p", "m", "--addr", addr[:strings.LastIndex(addr, ":")]+":1")
		if status != 1 || !strings.Contains(errOut, "cannot reach") {
			t.Fatalf("status %d err %q", status, errOut)
		}
	})
}
