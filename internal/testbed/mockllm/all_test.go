package mockllm

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// send makes one request and returns the status and body.
func send(t *testing.T, method, url, body string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAllServesThreeAPIsOnOnePort(t *testing.T) {
	ch := &Channel{API: All, Turns: []Turn{{Text: "hi ✓"}}}
	srv := httptest.NewServer(ch)
	defer srv.Close()
	t.Run("RUN-1/mock-all-answers-each-api-in-its-own-form", func(t *testing.T) {
		for path, shape := range map[string]string{
			"/v1/messages": `"type":"message"`, "/v1/chat/completions": `"object":"chat.completion"`, "/v1/responses": `"object":"response"`,
			"/messages": `"type":"message"`, "/chat/completions": `"object":"chat.completion"`, "/responses": `"object":"response"`,
		} {
			st, b := send(t, http.MethodPost, srv.URL+path, `{"model":"m"}`, nil)
			if st != 200 || !strings.Contains(b, shape) || !strings.Contains(b, "hi ✓") {
				t.Fatalf("%s: %d %s, want 200 with %s", path, st, b, shape)
			}
		}
		st, b := send(t, http.MethodPost, srv.URL+"/v1/messages", `{"model":"m","stream":true}`, nil)
		if st != 200 || !strings.Contains(b, "event: message_stop") {
			t.Fatalf("streamed Anthropic answer: %d %s", st, b)
		}
	})
	t.Run("RUN-1/mock-all-answers-side-routes", func(t *testing.T) {
		for _, c := range []struct {
			method, path, want string
			status             int
		}{
			{http.MethodPost, "/v1/messages/count_tokens", `"input_tokens":`, 200},
			{http.MethodGet, "/v1/models", `"id":"mock-model"`, 200},
			{http.MethodGet, "/health", `"ok":true`, 200},
			{http.MethodGet, "/", `"ok":true`, 200},
			{http.MethodHead, "/v1/messages", "", 200},
			{http.MethodGet, "/v1/messages", `"not_found_error"`, 404},
			{http.MethodPost, "/v1beta/models/m:generateContent", `"not_found_error"`, 404},
		} {
			if st, b := send(t, c.method, srv.URL+c.path, `{"messages":[]}`, nil); st != c.status || !strings.Contains(b, c.want) {
				t.Fatalf("%s %s: %d %s, want %d with %s", c.method, c.path, st, b, c.status, c.want)
			}
		}
		for _, call := range ch.Calls() {
			if want := apiOfPath(call.Path) != "" && call.Method == http.MethodPost; (call.Status != 0) != want {
				t.Fatalf("%s %s recorded with status %d", call.Method, call.Path, call.Status)
			}
		}
	})
}

func TestFailEveryAndEncodedBodies(t *testing.T) {
	t.Run("POOL-7/mock-fail-every-model-call", func(t *testing.T) {
		ch := &Channel{API: All, FailFirst: FailEvery, FailStatus: 529}
		srv := httptest.NewServer(ch)
		defer srv.Close()
		for range 3 {
			if st, b := send(t, http.MethodPost, srv.URL+"/v1/messages", `{}`, nil); st != 529 || !strings.Contains(b, "overloaded_error") {
				t.Fatalf("%d %s, want 529 overloaded_error", st, b)
			}
			if st, b := send(t, http.MethodPost, srv.URL+"/v1/chat/completions", `{}`, nil); st != 529 || !strings.Contains(b, "server_error") {
				t.Fatalf("%d %s, want 529 server_error", st, b)
			}
		}
		if st, _ := send(t, http.MethodPost, srv.URL+"/v1/messages/count_tokens", `{}`, nil); st != 200 {
			t.Fatalf("count_tokens %d: only model calls fail", st)
		}
	})
	t.Run("POOL-7/mock-fail-first-zero-fails-none", func(t *testing.T) {
		srv := httptest.NewServer(&Channel{API: Anthropic, FailStatus: 529})
		defer srv.Close()
		if st, b := send(t, http.MethodPost, srv.URL+"/v1/messages", `{}`, nil); st != 200 {
			t.Fatalf("%d %s", st, b)
		}
	})
	t.Run("POOL-21/mock-reads-gzip-request-body", func(t *testing.T) {
		ch := &Channel{API: Responses}
		srv := httptest.NewServer(ch)
		defer srv.Close()
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(`{"model":"m","prompt_cache_key":"k1"}`))
		zw.Close()
		if st, b := send(t, http.MethodPost, srv.URL+"/v1/responses", buf.String(), http.Header{"Content-Encoding": {"gzip"}}); st != 200 {
			t.Fatalf("%d %s", st, b)
		}
		if calls := ch.Calls(); len(calls) != 1 || calls[0].Body["prompt_cache_key"] != "k1" {
			t.Fatalf("recorded %+v", calls)
		}
	})
}
