package pool

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// rawDo sends one request to the pool with full control over Host and
// headers (no defaults added) and returns status and body.
func (w *world) rawDo(method, path, host string, hdr map[string]string, body string) (int, string) {
	w.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, w.srv.URL+path, strings.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := w.tr.RoundTrip(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestBrowserGuard(t *testing.T) {
	w := newWorld(t, []string{"a"}, []behaviour{okAnswer("a")}, "", Options{})
	body := msgBody("m", false)
	port := w.srv.URL[strings.LastIndexByte(w.srv.URL, ':')+1:]
	otherPort := "1"
	if port == "1" {
		otherPort = "2"
	}
	refused := []struct {
		name, method, path, host string
		hdr                      map[string]string
	}{
		{"POOL-20/cross-site-text-plain-post", "POST", "/pool/p/v1/messages", "",
			map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}},
		{"POOL-20/foreign-origin-alone", "POST", "/pool/p/v1/messages", "", map[string]string{"Origin": "http://evil.example:8080"}},
		{"POOL-20/null-origin", "POST", "/pool/p/v1/messages", "", map[string]string{"Origin": "null"}},
		{"POOL-20/localhost-lookalike-origin", "POST", "/pool/p/v1/messages", "", map[string]string{"Origin": "http://localhost.evil.example"}},
		{"POOL-20/sec-fetch-site-cross-site", "POST", "/pool/p/v1/messages", "", map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"POOL-20/sec-fetch-site-same-site", "POST", "/pool/p/v1/messages", "", map[string]string{"Sec-Fetch-Site": "same-site"}},
		{"POOL-20/dns-rebinding-host", "POST", "/pool/p/v1/messages", "rebind.evil.example:8080", nil},
		{"POOL-20/dns-rebinding-host-models", "GET", "/pool/p/v1/models", "rebind.evil.example", nil},
		{"POOL-13/dns-rebinding-host-status", "GET", "/pool/status", "rebind.evil.example", nil},
		{"POOL-13/dns-rebinding-host-page", "GET", "/pool/", "rebind.evil.example", nil},
		{"OPS-7/port-then-name-host", "POST", "/pool/p/v1/messages", "localhost:" + port + ".evil.example", nil},
		{"OPS-7/another-listeners-port", "POST", "/pool/p/v1/messages", "localhost:" + otherPort, nil},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			before := w.mocks["a"].calls()
			st, b := w.rawDo(tc.method, tc.path, tc.host, tc.hdr, body)
			if st != http.StatusForbidden || !strings.Contains(b, `"type":"error"`) {
				t.Fatalf("status %d body %s, want 403 in the pool's error shape", st, b)
			}
			if n := w.mocks["a"].calls(); n != before {
				t.Fatalf("upstream called %d times; a refused request must spend no key", n-before)
			}
		})
	}
	allowed := []struct {
		name, host string
		hdr        map[string]string
	}{
		{"POOL-20/agent-no-origin", "", nil},
		{"POOL-20/localhost-origin-any-port", "", map[string]string{"Origin": "http://localhost:5173"}},
		{"POOL-20/ipv6-loopback-origin", "", map[string]string{"Origin": "http://[::1]:9000"}},
		{"POOL-20/loopback-origin-same-origin-fetch", "", map[string]string{"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-origin"}},
		{"POOL-20/localhost-host", "localhost:" + port, nil},
		{"POOL-20/dot-localhost-host", "pool.localhost", nil},
		{"POOL-20/user-typed-url", "", map[string]string{"Sec-Fetch-Site": "none"}},
	}
	for _, tc := range allowed {
		t.Run(tc.name, func(t *testing.T) {
			st, b := w.rawDo("POST", "/pool/p/v1/messages", tc.host, tc.hdr, body)
			if st != 200 {
				t.Fatalf("status %d body %s, want 200", st, b)
			}
		})
	}
	t.Run("POOL-13/status-from-loopback-host", func(t *testing.T) {
		if st, b := w.rawDo("GET", "/pool/status", "", nil, ""); st != 200 {
			t.Fatalf("status %d %s", st, b)
		}
	})
	t.Run("POOL-2/browser-headers-not-forwarded", func(t *testing.T) {
		st, b := w.rawDo("POST", "/pool/p/v1/messages", "", map[string]string{"Origin": "http://127.0.0.1:3000",
			"Referer": "http://127.0.0.1:3000/x", "Cookie": "sid=1", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty", "Sec-Fetch-Site": "same-origin"}, body)
		if st != 200 {
			t.Fatalf("status %d %s", st, b)
		}
		h := w.mocks["a"].req(w.mocks["a"].calls() - 1).Header
		for _, k := range []string{"Origin", "Referer", "Cookie", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-Fetch-Site"} {
			if v := h.Get(k); v != "" {
				t.Errorf("upstream got %s: %q", k, v)
			}
		}
	})
}

func TestDuplicateKeys(t *testing.T) {
	w := newWorld(t, []string{"a"}, []behaviour{okAnswer("a")}, "    models:\n      - {id: flash, targets: {a: real-flash}}\n", Options{})
	msgs := `"max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]`
	for _, tc := range []struct{ name, body string }{
		{"POOL-2/duplicate-model-bypasses-allowlist", `{"model": "x", "model": "evil", "MODEL": "flash", ` + msgs + `}`},
		{"POOL-2/model-and-Model", `{"model": "flash", "Model": "evil", ` + msgs + `}`},
		{"POOL-7/duplicate-stream", `{"model": "flash", "stream": false, "Stream": true, ` + msgs + `}`},
		{"POOL-7/unicode-fold-stream", `{"model": "flash", "stream": false, "\u017ftream": true, ` + msgs + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := w.mocks["a"].calls()
			resp, b := w.callAPI("/pool/p/v1/messages", nil, tc.body)
			if resp.StatusCode != 400 || !strings.Contains(b, "more than one") {
				t.Fatalf("status %d body %s, want 400 naming the duplicate", resp.StatusCode, b)
			}
			if w.mocks["a"].calls() != before {
				t.Fatal("a refused body reached the channel")
			}
		})
	}
	t.Run("POOL-2/single-key-any-case-is-rewritten", func(t *testing.T) {
		resp, b := w.callAPI("/pool/p/v1/messages", nil, `{"MODEL": "flash", `+msgs+`}`)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d %s", resp.StatusCode, b)
		}
		got := w.mocks["a"].req(w.mocks["a"].calls() - 1).Body
		if got["MODEL"] != "real-flash" || got["model"] != nil {
			t.Fatalf("upstream body %v, want MODEL rewritten to the target", got)
		}
	})
	t.Run("POOL-2/nested-model-keys-are-not-duplicates", func(t *testing.T) {
		resp, b := w.callAPI("/pool/p/v1/messages", nil, `{"model": "flash", "metadata": {"model": "x", "MODEL": "y"}, `+msgs+`}`)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d %s", resp.StatusCode, b)
		}
	})
}

func TestClientCredentialsDropped(t *testing.T) {
	const token = "pool-token-0123456789abcdef"
	w := newWorld(t, []string{"a"}, []behaviour{okAnswer("a")}, "", Options{Token: token})
	t.Run("POOL-2/other-credential-headers-not-forwarded", func(t *testing.T) {
		st, b := w.rawDo("POST", "/pool/p/v1/messages", "", map[string]string{
			"X-Api-Key": token, "Content-Type": "application/json",
			"Api-Key": "client-azure-key", "X-Goog-Api-Key": "client-gemini-key", "Proxy-Authorization": "Basic dXNlcjpwdw==",
			"Cookie": "sid=1", "X-Custom-Auth": token, "X-Custom-Bearer": "Bearer " + token, "X-Embedded": "k=" + token + ";",
			"X-Harmless": "kept",
		}, msgBody("m", false))
		if st != 200 {
			t.Fatalf("status %d %s", st, b)
		}
		h := w.mocks["a"].req(0).Header
		for _, k := range []string{"Api-Key", "X-Goog-Api-Key", "Proxy-Authorization", "Cookie", "X-Custom-Auth", "X-Custom-Bearer", "X-Embedded", "Authorization"} {
			if v := h.Get(k); v != "" {
				t.Errorf("upstream got %s: %q", k, v)
			}
		}
		for k, vs := range h {
			if strings.Contains(strings.Join(vs, " "), token) {
				t.Errorf("pool token reached the channel in %s", k)
			}
		}
		if h.Get("X-Api-Key") != secretFor("a") || h.Get("X-Harmless") != "kept" {
			t.Fatalf("member key or end-to-end header missing: %v", h)
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
