package pool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// hostChannels routes each member's calls by host to its RoundTripper.
type hostChannels map[string]http.RoundTripper

func (h hostChannels) RoundTrip(r *http.Request) (*http.Response, error) {
	return h[r.URL.Host].RoundTrip(r)
}

// countCalls counts a member's calls.
type countCalls struct {
	mu sync.Mutex
	n  int
	rt http.RoundTripper
}

func (c *countCalls) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.rt.RoundTrip(r)
}

// cancelBody is a member's body that cancels the client's request when it
// hands out the first visible delta: the client leaves as the stream
// reaches its commit point.
type cancelBody struct {
	chunkBody
	cancel context.CancelFunc
}

func (b *cancelBody) Read(p []byte) (int, error) {
	n, err := b.chunkBody.Read(p)
	if bytes.Contains(p[:n], []byte("content_block_delta")) {
		b.cancel()
	}
	return n, err
}

type cancelChannel struct {
	chunks chan string
	cancel context.CancelFunc
}

func (s cancelChannel) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: &cancelBody{chunkBody{ctx: r.Context(), chunks: s.chunks}, s.cancel}, Request: r}, nil
}

// cancelWriter is a client that leaves during the commit point's write.
type cancelWriter struct {
	flushRecorder
	cancel context.CancelFunc
}

func (w *cancelWriter) Write(b []byte) (int, error) {
	w.cancel()
	return 0, errors.New("client gone")
}

// TestCancelAtCommitPoint: a client that leaves just as the first visible
// event arrives (before the pool writes it) or during the commit's write
// is a canceled call: no member failure, no failover to the next member
// (SPEC POOL-9, POOL-7), same API and translated.
func TestCancelAtCommitPoint(t *testing.T) {
	cfg, err := config.ParseConfig([]byte("channels:\n  a: {api: anthropic, base_url: 'http://127.0.0.1:9', api_key: sk-a-key}\n"+
		"  b: {api: anthropic, base_url: 'http://127.0.0.1:10', api_key: sk-b-key}\npools:\n  p:\n    members: [a, b]\n    strategy: failover\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{"before-write", "during-write"} {
		for _, path := range []string{"/v1/messages", "/v1/chat/completions"} {
			t.Run("POOL-9/cancel-at-commit-"+when+strings.ReplaceAll(path, "/", "-"), func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				chunks := make(chan string, 4)
				chunks <- anStartEvents
				chunks <- anDelta("first")
				var a http.RoundTripper = chunkChannel{chunks}
				var w http.ResponseWriter = &flushRecorder{h: http.Header{}}
				if when == "before-write" {
					a = cancelChannel{chunks, cancel}
				} else {
					w = &cancelWriter{flushRecorder{h: http.Header{}}, cancel}
				}
				b := &countCalls{rt: chunkChannel{make(chan string)}}
				p := New(cfg, Options{Transport: hostChannels{"127.0.0.1:9": a, "127.0.0.1:10": b}, Logger: discardLogger()})
				body := msgBody("m", true)
				if path != "/v1/messages" {
					body = chatStreamBody
				}
				r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/pool/p"+path, strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				done := make(chan struct{})
				go func() { defer close(done); p.ServeHTTP(w, r) }()
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					t.Fatal("the call did not end after the client left")
				}
				st := p.Status()
				if len(st.Recent) != 1 || st.Recent[0].Class != "canceled" {
					t.Fatalf("records %+v", st.Recent)
				}
				for _, m := range st.Pools[0].Members {
					if m.Failures != 0 {
						t.Fatalf("client cancel counted as member failure: %+v", m)
					}
				}
				b.mu.Lock()
				defer b.mu.Unlock()
				if b.n != 0 {
					t.Fatal("failover after the client left")
				}
			})
		}
	}
}

func TestClientCancel(t *testing.T) {
	for _, tc := range []struct {
		name        string
		afterCommit bool
	}{{"POOL-9/cancel-mid-stream", true}, {"POOL-9/cancel-before-first-output", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var w *world
			slow := func(rw http.ResponseWriter, r *http.Request, _ int) {
				sseHead(rw)
				messageStart(rw, "a", nil)
				if tc.afterCommit {
					textDelta(rw, "partial")
				}
				w.mocks["a"].waitCtx(r)
			}
			w = newWorld(t, []string{"a", "b"}, []behaviour{slow, okAnswer("b")}, "", Options{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.afterCommit {
				resp := w.do(ctx, "/pool/p/v1/messages", map[string]string{"X-Claude-Code-Session-Id": "c"}, msgBody("m", true))
				br := bufio.NewReader(resp.Body)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						t.Fatalf("stream ended before the delta: %v", err)
					}
					if strings.Contains(line, "partial") {
						break
					}
				}
				cancel()
				resp.Body.Close()
			} else {
				done := make(chan struct{})
				go func() {
					defer close(done)
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, w.srv.URL+"/pool/p/v1/messages", strings.NewReader(msgBody("m", true)))
					req.Header.Set("X-Claude-Code-Session-Id", "c")
					if resp, err := w.tr.RoundTrip(req); err == nil {
						resp.Body.Close()
					}
				}()
				testkit.WaitFor(t, 5*time.Second, "a to receive the call", func() bool { return w.mocks["a"].calls() == 1 })
				cancel()
				<-done
			}
			w.checkClientGone(t)
		})
	}
}

// checkClientGone: after the client left a call to member a, a's request
// was cancelled, the call is recorded as canceled, a has no failure and
// is ready, and nothing failed over to b (SPEC POOL-9).
func (w *world) checkClientGone(t *testing.T) {
	t.Helper()
	select {
	case <-w.mocks["a"].ctxDone:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream request not cancelled")
	}
	testkit.WaitFor(t, 5*time.Second, "call record", func() bool { return len(w.pool.Status().Recent) == 1 })
	if a := w.member("a"); a.Failures != 0 || a.State != "ready" {
		t.Fatalf("client gone counted as member failure: %+v", a)
	}
	if w.mocks["b"].calls() != 0 {
		t.Fatal("failover after the client left")
	}
	if r := w.pool.Status().Recent[0]; r.Class != "canceled" {
		t.Fatalf("record %+v", r)
	}
}
