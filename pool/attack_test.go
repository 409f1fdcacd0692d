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
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// TestHostileMemberErrorBodies: a member that sends an error status and
// then stalls in its body, or sends an endless or gzip-bomb error body,
// costs one bounded attempt and a failover, never a hang (POOL-10,
// POOL-17).
func TestHostileMemberErrorBodies(t *testing.T) {
	stallBody := func(code int) behaviour {
		return func(w http.ResponseWriter, r *http.Request, _ int) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(code)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}
	endless := func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"`)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for i := 0; i < 1<<11 && r.Context().Err() == nil; i++ { // at most 128 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
	for _, tc := range []struct {
		name   string
		b      behaviour
		stream bool
	}{
		{"POOL-10/529-head-then-stalled-body-stream", stallBody(529), true},
		{"POOL-10/529-head-then-stalled-body-non-stream", stallBody(529), false},
		{"POOL-10/400-head-then-stalled-body-stream", stallBody(400), true},
		{"POOL-17/endless-529-body-stream", endless, true},
		{"POOL-17/endless-529-body-non-stream", endless, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []string{"a", "b"}, []behaviour{tc.b, okAnswer("b")}, "    strategy: failover\n    first_output_timeout_ms: 500\n    response_timeout_ms: 500\n", Options{})
			start := time.Now()
			resp, body := w.call("s1", tc.stream)
			d := time.Since(start)
			if d > 8*time.Second {
				t.Fatalf("took %v", d)
			}
			if resp.StatusCode != 200 || !strings.Contains(body, "msg_b") {
				t.Fatalf("want b's answer after the failover: %d %.300s", resp.StatusCode, body)
			}
		})
	}
}

// TestAggregateStatusNeverSuccess: members that answer 200 with something
// the pool cannot use (a JSON document to a streaming request) failed; the
// aggregated error (SPEC POOL-11) must carry an error status, never the
// members' 200, or clients read the error document as an answer and do not
// retry.
func TestAggregateStatusNeverSuccess(t *testing.T) {
	jsonAnswer := func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}]}`)
	}
	for _, tc := range []struct {
		name string
		b    []behaviour
		want int
	}{
		{"POOL-11/unusable-200-answers-are-502", []behaviour{jsonAnswer, jsonAnswer}, 502},
		{"POOL-11/unusable-200-then-401-is-502-the-more-transient", []behaviour{jsonAnswer, statusAnswer(401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)}, 502},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []string{"a", "b"}, tc.b, "    strategy: failover\n", Options{})
			resp, body := w.call("s1", true)
			if resp.StatusCode != tc.want || !strings.Contains(body, "all 2 attempted members failed") {
				t.Fatalf("client got %d (want %d): %.300s", resp.StatusCode, tc.want, body)
			}
		})
	}
}

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
