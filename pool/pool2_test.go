package pool

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testkit"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

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

func TestRequestRewrite(t *testing.T) {
	names := []string{"a", "b"}
	w := newWorld(t, names, []behaviour{okAnswer("a"), okAnswer("b")},
		"    models:\n      - {id: flash, targets: {a: deepseek-flash-a, b: deepseek-v4.1-flash}}\n", Options{})
	hdr := map[string]string{"X-Claude-Code-Session-Id": "rw", "x-api-key": "client-key-XYZ", "Authorization": "Bearer client-tok-XYZ",
		"anthropic-beta": "claude-code-20250219,effort-2025-11-24", "Connection": "X-Drop-Me", "X-Drop-Me": "1", "Accept-Encoding": "zstd"}
	body := `{"model":"flash","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"u"}}`
	resp := w.do(context.Background(), "/pool/p/v1/messages?beta=true", hdr, body)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	m := w.mocks[resp.Header.Get("X-Pool-Member")]
	got := m.req(0)
	t.Run("POOL-2/model-rewritten-per-member", func(t *testing.T) {
		want := map[string]string{"a": "deepseek-flash-a", "b": "deepseek-v4.1-flash"}[m.name]
		if got.Body["model"] != want || got.Body["max_tokens"] != float64(5) {
			t.Fatalf("body %v", got.Body)
		}
	})
	t.Run("POOL-2/credential-swapped", func(t *testing.T) {
		if got.Header.Get("X-Api-Key") != secretFor(m.name) || got.Header.Get("Authorization") != "" {
			t.Fatalf("auth headers %q %q", got.Header.Get("X-Api-Key"), got.Header.Get("Authorization"))
		}
	})
	t.Run("POOL-1/anthropic-headers-and-query-kept", func(t *testing.T) {
		if got.Header.Get("Anthropic-Version") != "2023-06-01" || got.Header.Get("Anthropic-Beta") != hdr["anthropic-beta"] {
			t.Fatalf("headers %v", got.Header)
		}
		if got.Query != "beta=true" || got.Path != "/v1/messages" {
			t.Fatalf("path %q query %q", got.Path, got.Query)
		}
		if got.Header.Get("X-Drop-Me") != "" || strings.Contains(got.Header.Get("Accept-Encoding"), "zstd") {
			t.Fatalf("hop-by-hop or encoding forwarded: %v", got.Header)
		}
	})
	t.Run("POOL-13b/response-headers", func(t *testing.T) {
		s := resp.Header.Get("X-Pool-Session")
		if !regexp.MustCompile(`^[0-9a-f]{12}$`).MatchString(s) || s == "rw" || resp.Header.Get("X-Pool-Attempts") != "1" {
			t.Fatalf("headers %v", resp.Header)
		}
	})
	t.Run("POOL-1/unknown-model-404", func(t *testing.T) {
		resp := w.do(context.Background(), "/pool/p/v1/messages", nil, msgBody("nope", false))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.Contains(string(b), "not_found_error") || !strings.Contains(string(b), `(models: flash`) {
			t.Fatalf("%d %s (want the valid models listed)", resp.StatusCode, b)
		}
	})
	t.Run("POOL-1/unknown-pool-404-lists-pools", func(t *testing.T) {
		resp := w.do(context.Background(), "/pool/nope/v1/messages", nil, msgBody("flash", false))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || !strings.Contains(string(b), `no pool \"nope\" (pools: p`) {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	})
	t.Run("POOL-1/count-tokens-passthrough", func(t *testing.T) {
		before := w.mocks["a"].calls() + w.mocks["b"].calls()
		resp := w.do(context.Background(), "/pool/p/v1/messages/count_tokens", map[string]string{"X-Claude-Code-Session-Id": "ct"}, `{"model":"flash","messages":[{"role":"user","content":"hi"}]}`)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"input_tokens": 42`) {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if w.mocks["a"].calls()+w.mocks["b"].calls() != before+1 {
			t.Fatal("count_tokens not forwarded once")
		}
		mm := w.mocks[resp.Header.Get("X-Pool-Member")]
		last := mm.req(mm.calls() - 1)
		if last.Path != "/v1/messages/count_tokens" || last.Body["model"] == "flash" {
			t.Fatalf("count_tokens request %+v", last)
		}
		for _, s := range w.pool.Status().Sessions {
			if s.Session == balance.SessionHash("ct") {
				t.Fatal("count_tokens created a binding")
			}
		}
	})
}

func TestModelsEndpoint(t *testing.T) {
	t.Run("POOL-12/models-merged", func(t *testing.T) {
		a, b := newMock(t, "a", okAnswer("a")), newMock(t, "b", okAnswer("b"))
		y := `
channels:
  a: {api: anthropic, base_url: ` + a.srv.URL + `, api_key: sk-ant-SECRET-a, models: [{id: fa, context_window: 200000, max_tokens: 64000, input: [text, image], efforts: [low, medium, high, max]}]}
  b: {api: anthropic, base_url: ` + b.srv.URL + `, api_key: sk-ant-SECRET-b, models: [{id: fb, context_window: 131072, max_tokens: 32768, input: [text], efforts: [low, high]}]}
pools:
  p:
    members: [a, b]
    models:
      - {id: flash, targets: {a: fa, b: fb}}
      - {id: pinned, targets: {a: fa, b: fb}, context_window: 100000, efforts: [high]}
`
		cfg, err := config.ParseConfig([]byte(y), nil)
		if err != nil {
			t.Fatal(err)
		}
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		p := New(cfg, Options{Transport: tr, Token: "tok"})
		req, _ := http.NewRequest(http.MethodGet, "/pool/p/v1/models", nil)
		req.Host = "127.0.0.1:8080" // in process: ServeHTTP checks Host (POOL-20 DNS-rebinding guard)
		req.Header.Set("Authorization", "Bearer tok")
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		var doc struct {
			Data []struct {
				ID            string   `json:"id"`
				Type          string   `json:"type"`
				ContextWindow int      `json:"context_window"`
				MaxTokens     int      `json:"max_tokens"`
				Input         []string `json:"input"`
				Efforts       []string `json:"efforts"`
			} `json:"data"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil || len(doc.Data) != 2 {
			t.Fatalf("%d %s", rec.Code, rec.Body.String())
		}
		f := doc.Data[0]
		if f.ID != "flash" || f.Type != "model" || f.ContextWindow != 131072 || f.MaxTokens != 32768 ||
			strings.Join(f.Input, ",") != "text,image" || strings.Join(f.Efforts, ",") != "low,high" {
			t.Fatalf("merged %+v", f)
		}
		if pn := doc.Data[1]; pn.ContextWindow != 100000 || strings.Join(pn.Efforts, ",") != "high" {
			t.Fatalf("overrides %+v", pn)
		}
		// POOL-12 at call time: an image goes only to the member that takes images.
		ts := httptest.NewServer(p)
		defer ts.Close()
		srv := ts.URL
		for i := 0; i < 4; i++ {
			body := `{"model":"flash","max_tokens":10,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]}`
			rq, _ := http.NewRequest(http.MethodPost, srv+"/pool/p/v1/messages", strings.NewReader(body))
			rq.Header.Set("x-api-key", "tok")
			rq.Header.Set("X-Session-Id", "img"+string(rune('0'+i)))
			resp, err := tr.RoundTrip(rq)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.Header.Get("X-Pool-Member") != "a" {
				t.Fatalf("image call %d went to %q", i, resp.Header.Get("X-Pool-Member"))
			}
		}
		if b.calls() != 0 {
			t.Fatal("text-only member got an image")
		}
		if a, ok := p.API("p"); !ok || a != config.APIAnthropic {
			t.Fatalf("API = %q %v", a, ok)
		}
		if _, ok := p.API("nope"); ok {
			t.Fatal("API of unknown pool")
		}
	})
}

func TestToken(t *testing.T) {
	w := newWorld(t, []string{"a"}, []behaviour{okAnswer("a")}, "", Options{Token: "local-token"})
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"POOL-20/no-token-401", nil, 401},
		{"POOL-20/wrong-token-401", map[string]string{"x-api-key": "nope"}, 401},
		{"POOL-20/x-api-key-ok", map[string]string{"x-api-key": "local-token"}, 200},
		{"POOL-20/bearer-ok", map[string]string{"Authorization": "Bearer local-token"}, 200},
		{"POOL-20/bearer-lower-case-scheme-ok", map[string]string{"Authorization": "bearer local-token"}, 200},
		{"POOL-20/bearer-upper-case-scheme-ok", map[string]string{"Authorization": "BEARER  local-token"}, 200},
		{"POOL-20/basic-scheme-401", map[string]string{"Authorization": "Basic local-token"}, 401},
		{"POOL-20/scheme-only-401", map[string]string{"Authorization": "local-token"}, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := w.do(context.Background(), "/pool/p/v1/messages", tc.hdr, msgBody("m", false))
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if tc.want == 401 && !strings.Contains(string(b), `"authentication_error"`) {
				t.Fatalf("not Anthropic-shaped: %s", b)
			}
			if tc.want == 401 && !strings.Contains(string(b), "dual-proxy status --show-token") {
				t.Fatalf("401 does not say where the token is: %s", b)
			}
			if tc.want == 200 && w.mocks["a"].req(w.mocks["a"].calls()-1).Header.Get("X-Api-Key") != secretFor("a") {
				t.Fatal("pool token forwarded upstream")
			}
		})
	}
}

func TestOwnPing(t *testing.T) {
	t.Run("POOL-7/own-ping-on-quiet-stream", func(t *testing.T) {
		quiet := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			messageStart(w, "a", nil)
			textDelta(w, "first")
			select {
			case <-time.After(400 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
			textDelta(w, "second")
			messageEnd(w)
		}
		w := newWorld(t, []string{"a"}, []behaviour{quiet}, "", Options{PingInterval: 50 * time.Millisecond})
		_, body := w.call("q", true)
		evs := events(body)
		// One ping from upstream's preamble, at least one of ours in the gap.
		if count(evs, "ping") < 2 || count(evs, "message_stop") != 1 {
			t.Fatalf("events %v", evs)
		}
		iFirst, iSecond := strings.Index(body, "first"), strings.Index(body, "second")
		if !strings.Contains(body[iFirst:iSecond], "event: ping") {
			t.Fatalf("no ping between the deltas: %q", body)
		}
	})
	t.Run("POOL-7/idle-after-commit-becomes-error-event", func(t *testing.T) {
		var w *world
		stall := func(rw http.ResponseWriter, r *http.Request, _ int) {
			sseHead(rw)
			messageStart(rw, "a", nil)
			textDelta(rw, "first")
			w.mocks["a"].waitCtx(r)
		}
		w = newWorld(t, []string{"a"}, []behaviour{stall}, "    stream_idle_timeout_ms: 200\n", Options{PingInterval: 50 * time.Millisecond})
		_, body := w.call("idle", true)
		evs := events(body)
		if evs[len(evs)-1] != "error" || count(evs, "message_stop") != 0 || !strings.Contains(body, "timeout_error") {
			t.Fatalf("events %v", evs)
		}
	})
}

func TestReload(t *testing.T) {
	t.Run("POOL-16/reload-keeps-bindings-of-existing-members", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{okAnswer("a"), okAnswer("b")}, "", Options{})
		w.call("s1", true) // a
		w.call("s2", true) // b
		cfg, _ := w.pool.config()
		// New config: pool p without b.
		y := "channels:\n  a: {api: anthropic, base_url: " + w.mocks["a"].srv.URL + ", api_key: sk-ant-SECRET-a}\npools:\n  p: {members: [a]}\n"
		next, err := config.ParseConfig([]byte(y), nil)
		if err != nil {
			t.Fatal(err)
		}
		w.pool.Reload(next)
		st := w.pool.Status()
		if len(st.Sessions) != 1 || st.Sessions[0].Bindings["m"] != "a" {
			t.Fatalf("sessions after reload %+v", st.Sessions)
		}
		resp, _ := w.call("s2", true)
		if resp.Header.Get("X-Pool-Member") != "a" {
			t.Fatalf("s2 not reassigned: %v", resp.Header)
		}
		w.pool.Reload(cfg)
	})
}

func TestStrategies(t *testing.T) {
	t.Run("POOL-4/round-robin-rotates-per-call", func(t *testing.T) {
		names, bs := three()
		w := newWorld(t, names, bs, "    strategy: round-robin\n", Options{})
		var got []string
		for i := 0; i < 6; i++ {
			r, _ := w.call("same", true)
			got = append(got, r.Header.Get("X-Pool-Member"))
		}
		if strings.Join(got, "") != "abcabc" {
			t.Fatalf("order %v", got)
		}
	})
	t.Run("POOL-4/failover-first-available", func(t *testing.T) {
		names, bs := three()
		bs[0] = statusAnswer(503, nil, `{}`)
		w := newWorld(t, names, bs, "    strategy: failover\n", Options{})
		var got []string
		for i := 0; i < 3; i++ {
			r, _ := w.call(string(rune('x'+i)), true)
			got = append(got, r.Header.Get("X-Pool-Member"))
		}
		if strings.Join(got, "") != "bbb" || w.mocks["a"].calls() != 1 {
			t.Fatalf("order %v, a calls %d", got, w.mocks["a"].calls())
		}
	})
}

func TestPreambleCap(t *testing.T) {
	t.Run("POOL-7/preamble-over-256KiB-commits", func(t *testing.T) {
		var w *world
		chatty := func(rw http.ResponseWriter, r *http.Request, _ int) {
			sseHead(rw)
			messageStart(rw, "a", nil)
			pad := strings.Repeat("x", 1024)
			for i := 0; i < 300; i++ {
				fmt.Fprintf(rw, ": %s\n\n", pad)
			}
			rw.(http.Flusher).Flush()
			w.mocks["a"].waitCtx(r)
		}
		w = newWorld(t, []string{"a", "b"}, []behaviour{chatty, okAnswer("b")}, "", Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		resp := w.do(ctx, "/pool/p/v1/messages", map[string]string{"X-Session-Id": "cap"}, msgBody("m", true))
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Pool-Member") != "a" {
			t.Fatalf("%d %v", resp.StatusCode, resp.Header)
		}
		n, _ := io.CopyN(io.Discard, resp.Body, 256<<10)
		if n != 256<<10 {
			t.Fatalf("read %d", n)
		}
		cancel()
	})
}
