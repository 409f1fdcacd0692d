package pool

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

func TestModelsWithoutModelsKey(t *testing.T) {
	// A pool without models: takes any model id; its lists show what its
	// members declare, merged over the members declaring each id.
	y := `
channels:
  a: {api: openai, base_url: "http://127.0.0.1:9", api_key: sk-a, models: [{id: fa, context_window: 200000, max_tokens: 64000}, {id: shared, context_window: 200000, max_tokens: 64000, input: [text, image]}]}
  b: {api: anthropic, base_url: "http://127.0.0.1:9", api_key: sk-b, models: [{id: shared, context_window: 131072, max_tokens: 32768, input: [text]}, {id: fb}]}
  c: {api: anthropic, base_url: "http://127.0.0.1:9", api_key: sk-c}
pools:
  p: {members: [a, b, c]}
  bare: {members: [c]}
`
	cfg, err := config.ParseConfig([]byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := New(cfg, Options{Transport: &http.Transport{}})
	get := func(t *testing.T, path string, hdr ...string) []byte {
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1:8080" // in process: ServeHTTP checks Host (POOL-20)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		return rec.Body.Bytes()
	}
	type entry struct {
		ID            string   `json:"id"`
		ContextWindow int      `json:"context_window"`
		MaxTokens     int      `json:"max_tokens"`
		Input         []string `json:"input"`
	}
	check := func(t *testing.T, data []entry) {
		var ids []string
		for _, e := range data {
			ids = append(ids, e.ID)
		}
		if strings.Join(ids, ",") != "fa,shared,fb" {
			t.Fatalf("models %v, want fa,shared,fb (member then declaration order)", ids)
		}
		if s := data[1]; s.ContextWindow != 131072 || s.MaxTokens != 32768 || strings.Join(s.Input, ",") != "text,image" {
			t.Fatalf("shared not merged over its members: %+v", s)
		}
	}
	t.Run("POOL-1/openai-list-shows-the-members-models", func(t *testing.T) {
		var doc struct {
			Object string  `json:"object"`
			Data   []entry `json:"data"`
		}
		if err := json.Unmarshal(get(t, "/pool/p/v1/models"), &doc); err != nil || doc.Object != "list" {
			t.Fatalf("%+v %v", doc, err)
		}
		check(t, doc.Data)
	})
	t.Run("POOL-1/anthropic-list-shows-the-members-models", func(t *testing.T) {
		var doc struct {
			Data    []entry `json:"data"`
			FirstID string  `json:"first_id"`
			LastID  string  `json:"last_id"`
		}
		if err := json.Unmarshal(get(t, "/pool/p/v1/models", "anthropic-version", "2023-06-01"), &doc); err != nil {
			t.Fatal(err)
		}
		check(t, doc.Data)
		if doc.FirstID != "fa" || doc.LastID != "fb" {
			t.Fatalf("first_id %q last_id %q", doc.FirstID, doc.LastID)
		}
	})
	t.Run("POOL-1/gemini-list-shows-the-members-models", func(t *testing.T) {
		var doc struct {
			Models []struct {
				Name            string `json:"name"`
				InputTokenLimit int    `json:"inputTokenLimit"`
			} `json:"models"`
		}
		if err := json.Unmarshal(get(t, "/pool/p/v1beta/models"), &doc); err != nil || len(doc.Models) != 3 ||
			doc.Models[1].Name != "models/shared" || doc.Models[1].InputTokenLimit != 131072 {
			t.Fatalf("%+v %v", doc, err)
		}
	})
	t.Run("POOL-1/no-member-declares-models-empty-list", func(t *testing.T) {
		if got := string(get(t, "/pool/bare/v1/models", "anthropic-version", "2023-06-01")); !strings.HasPrefix(got, `{"data":[],`) {
			t.Fatalf("bare pool: %s", got)
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

// TestModelsFetchedFromMembers: a pool without models: whose members'
// channels declare none lists what the members serve, fetched from their
// own model lists like the editor's "Gather models", each id once and
// unchanged (the pool sends it as is), kept for a while and fetched again
// after it (SPEC POOL-1).
func TestModelsFetchedFromMembers(t *testing.T) {
	var fetches atomic.Int64
	list := func(body string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/models" || r.Header.Get("x-api-key") == "" && r.Header.Get("Authorization") == "" {
				http.NotFound(w, r)
				return
			}
			fetches.Add(1)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
		}))
		t.Cleanup(s.Close)
		return s
	}
	a := list(`{"data":[{"id":"m-a","context_window":200000},{"id":"shared","context_window":128000,"max_tokens":8000}]}`)
	b := list(`{"data":[{"id":"shared","context_window":64000},{"id":"m-b"}]}`)
	y := fmt.Sprintf(`
channels:
  a: {api: anthropic, base_url: %q, api_key: sk-a}
  b: {api: openai, base_url: %q, api_key: sk-b}
  d: {api: anthropic, base_url: "http://127.0.0.1:9", api_key: sk-d, models: [{id: declared}]}
pools:
  p: {members: [a, d, b]}
`, a.URL, b.URL)
	cfg, err := config.ParseConfig([]byte(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	p := New(cfg, Options{Transport: tr, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	ids := func(t *testing.T) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "/pool/p/v1/models", nil)
		req.Host = "127.0.0.1:8080"
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		var doc struct {
			Data []struct {
				ID            string `json:"id"`
				ContextWindow int    `json:"context_window"`
				MaxTokens     int    `json:"max_tokens"`
			} `json:"data"`
		}
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
			t.Fatalf("GET /v1/models: %d %s", rec.Code, rec.Body)
		}
		var out []string
		for _, d := range doc.Data {
			out = append(out, fmt.Sprintf("%s/%d/%d", d.ID, d.ContextWindow, d.MaxTokens))
		}
		return strings.Join(out, " ")
	}
	t.Run("POOL-1/list-of-a-pool-without-models-is-what-the-members-serve", func(t *testing.T) {
		if got, want := ids(t), "m-a/200000/0 shared/64000/8000 declared/0/0 m-b/0/0"; got != want {
			t.Fatalf("models %q, want %q (member order, each id once, limits the smallest known)", got, want)
		}
		if n := fetches.Load(); n != 2 {
			t.Fatalf("%d fetches, want one per member without declared models", n)
		}
	})
	t.Run("POOL-1/members-lists-kept-then-fetched-again", func(t *testing.T) {
		ids(t)
		if n := fetches.Load(); n != 2 {
			t.Fatalf("%d fetches after a second list within %v, want 2", n, memberListTTL)
		}
		mu.Lock()
		now = now.Add(memberListTTL + time.Second)
		mu.Unlock()
		ids(t)
		if n := fetches.Load(); n != 4 {
			t.Fatalf("%d fetches after %v, want 4", n, memberListTTL)
		}
	})
}
