package pool

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/balance"
)

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
