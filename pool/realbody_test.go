package pool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/proxy"
)

// bigBody is a Messages request of about n bytes (one long user message).
func bigBody(n int, stream bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"model":"m","max_tokens":64,"stream":`)
	if stream {
		b.WriteString("true")
	} else {
		b.WriteString("false")
	}
	b.WriteString(`,"messages":[{"role":"user","content":"`)
	b.Write(bytes.Repeat([]byte("abcdefgh"), n/8))
	b.WriteString(`"}]}`)
	return b.Bytes()
}

// discardChannel answers okChannel's JSON without keeping the body.
func discardChannel(t *testing.T, who string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		answerJSON(w, who)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRequestBodyMemory: a too-large body gets a clear 413 in the API's
// error shape, and a buffered body costs the pool about its own size, not
// several copies (SPEC POOL-17).
func TestRequestBodyMemory(t *testing.T) {
	t.Run("POOL-17/too-large-body-413-in-api-shape", func(t *testing.T) {
		w := newRWorld(t, rconf{}, []string{"a"}, okChannel("a"))
		body := bigBody(pool.MaxRequestBody+1<<20, false)
		req, _ := http.NewRequest(http.MethodPost, w.srv.URL+"/pool/p/v1/messages", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := w.client.Do(req)
		if err != nil {
			t.Fatalf("the client got %v instead of a 413", err)
		}
		defer resp.Body.Close()
		var doc struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 413 || json.Unmarshal(b, &doc) != nil || doc.Type != "error" || doc.Error.Type != "request_too_large" ||
			!strings.Contains(doc.Error.Message, "MiB") {
			t.Fatalf("got %d %s", resp.StatusCode, b)
		}
		if w.ch["a"].calls() != 0 {
			t.Fatal("a too-large body reached the channel")
		}
	})
	t.Run("POOL-17/too-large-body-413-through-the-proxy-listener", func(t *testing.T) {
		w := newRWorld(t, rconf{}, []string{"a"}, okChannel("a"))
		srv, err := proxy.New(proxy.Config{Handler: w.pool, LoopbackDirect: true})
		if err != nil {
			t.Fatal(err)
		}
		addr := testkit.Serve(t, srv)
		body := bigBody(pool.MaxRequestBody+1<<20, false)
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/pool/p/v1/messages", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := w.client.Do(req)
		if err != nil {
			t.Fatalf("the client got %v instead of a 413", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 413 || !strings.Contains(string(b), "request_too_large") {
			t.Fatalf("got %d %s", resp.StatusCode, b)
		}
	})
	t.Run("POOL-17/buffered-body-costs-about-its-size", func(t *testing.T) {
		srv := discardChannel(t, "a")
		cfg, err := config.ParseConfig([]byte("channels:\n  a: {api: anthropic, base_url: \""+srv.URL+"\", api_key: sk-test-a-0123456789}\npools:\n  p:\n    members: [a]\n"), func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		p := pool.New(cfg, pool.Options{Transport: tr})
		const size = 30 << 20
		body := bigBody(size, false)
		one := func() uint64 {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/pool/p/v1/messages", bytes.NewReader(body))
			req.Host = "127.0.0.1"
			rec := httptest.NewRecorder()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			p.ServeHTTP(rec, req)
			runtime.ReadMemStats(&after)
			if rec.Code != 200 {
				t.Fatalf("status %d %s", rec.Code, rec.Body)
			}
			return after.TotalAlloc - before.TotalAlloc
		}
		one() // warm up connections
		// The body is read once into a buffer of its Content-Length and
		// walked in place (was 345 MiB for this request).
		if alloc := one(); alloc > size*3/2 {
			t.Fatalf("one %d MiB request allocated %d MiB in the pool (want under 1.5x the body)", size>>20, alloc>>20)
		}
	})
}

// TestBodyBudget: bodies beyond the global budget are served by one member
// only (sent once, not kept for failover); bodies within it keep failover
// (SPEC POOL-17).
func TestBodyBudget(t *testing.T) {
	t.Run("POOL-17/body-beyond-budget-goes-to-one-member", func(t *testing.T) {
		release := make(chan struct{})
		arrived := make(chan struct{}, 4)
		a := func(w http.ResponseWriter, r *http.Request, n int, _ []byte) {
			arrived <- struct{}{}
			if n == 0 {
				<-release // the first call holds its 30 MiB for a while
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"boom"}}`)
		}
		b := func(w http.ResponseWriter, r *http.Request, _ int, _ []byte) { answerJSON(w, "b") }
		w := newRWorld(t, rconf{poolExtra: "    strategy: failover\n", opts: pool.Options{BodyBudget: 4 << 20}}, []string{"a", "b"}, a, b)
		body := string(bigBody(3<<20, false))
		first := make(chan string, 1)
		go func() {
			// No t.Fatal here (not the test's goroutine): the result is sent.
			req, _ := http.NewRequest(http.MethodPost, w.srv.URL+"/pool/p/v1/messages", strings.NewReader(body))
			req.Header.Set("X-Session-Id", "s1")
			resp, err := w.client.Do(req)
			if err != nil {
				first <- err.Error()
				return
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			first <- fmt.Sprint(resp.StatusCode, " ", string(got))
		}()
		<-arrived
		// The budget holds the first body: the second is sent to a only.
		resp, got := w.do("/pool/p/v1/messages", "s2", body)
		if resp.StatusCode != 500 || w.ch["b"].calls() != 0 {
			t.Fatalf("second call: %d %s, b calls %d", resp.StatusCode, got, w.ch["b"].calls())
		}
		close(release)
		if got := <-first; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, "hi from b") {
			t.Fatalf("first call (within the budget) did not fail over: %.200s", got)
		}
	})
}
