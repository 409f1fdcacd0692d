package pool

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

func TestPoolTest(t *testing.T) {
	t.Run("POOL-14/test-reports-member-ttft-attempts-and-records-no-binding", func(t *testing.T) {
		slow := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			messageStart(w, "b", nil)
			time.Sleep(150 * time.Millisecond) // the upstream's time to first token
			textDelta(w, "ok")
			messageEnd(w)
		}
		w := newWorld(t, []string{"a", "b"}, []behaviour{statusAnswer(529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), slow}, "", Options{Token: "tok"})
		res, err := w.pool.Test(t.Context(), "p", "m")
		if err != nil {
			t.Fatal(err)
		}
		if res.Result != "ok" || res.Member != "b" || res.Attempts != 2 || len(res.Failed) != 1 || res.Failed[0].Member != "a" ||
			res.Failed[0].Class != config.ClassServer || res.Status != 200 || res.TTFTMs < 150 || res.TTFTMs > 5000 || res.TotalMs < res.TTFTMs {
			t.Fatalf("result %+v", res)
		}
		st := w.pool.Status()
		if len(st.Sessions) != 0 || w.member("b").BoundSessions != 0 {
			t.Fatalf("test call left a binding: %+v", st.Sessions)
		}
		if r := st.Recent[len(st.Recent)-1]; r.Session != testSession || r.Member != "b" || r.Failovers != 1 {
			t.Fatalf("record %+v", r)
		}
		got := w.mocks["b"].req(0)
		if got.Body["stream"] != true || got.Body["model"] != "m" || got.Header.Get("X-Api-Key") != secretFor("b") {
			t.Fatalf("upstream saw %v %v", got.Body, got.Header)
		}
	})
	t.Run("POOL-14/test-failure-has-class-and-error", func(t *testing.T) {
		w := openaiWorld(t, []behaviour{statusAnswer(401, nil, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key"}}`)}, "", Options{})
		res, err := w.pool.Test(t.Context(), "p", "m")
		if err != nil || res.Result != "failed" || res.Class != config.ClassAuth || res.Error != "bad key" || res.Status != 401 || res.Member != "" || res.TTFTMs != 0 {
			t.Fatalf("%+v %v", res, err)
		}
		if w.mocks["a"].req(0).Path != "/v1/chat/completions" {
			t.Fatal("openai test not sent as chat completions")
		}
		if _, err := w.pool.Test(t.Context(), "nope", "m"); !errors.Is(err, ErrNoPool) {
			t.Fatalf("unknown pool: %v", err)
		}
	})
	t.Run("POOL-14/test-after-commit-failure-is-failed", func(t *testing.T) {
		partial := func(w http.ResponseWriter, r *http.Request, _ int) {
			sseHead(w)
			chatChunk(w, "a", map[string]any{"content": "o"}, nil)
		}
		w := openaiWorld(t, []behaviour{partial}, "", Options{})
		res, _ := w.pool.Test(t.Context(), "p", "m")
		if res.Result != "failed" || res.Member != "a" || res.Class != config.ClassNetwork || res.TTFTMs == 0 {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("POOL-14/test-of-a-pool-whose-id-uses-the-whole-alphabet", func(t *testing.T) {
		// Every byte class of the id alphabet (SPEC POOL-3); ids outside
		// it ("50%off", "a?b#c") are refused at load (pool/config).
		ids := []string{"50.off", "a_b-c", "Z.9_-x"}
		var extra strings.Builder
		for _, id := range ids {
			fmt.Fprintf(&extra, "  %q: {members: [a]}\n", id)
		}
		w := newWorld(t, []string{"a"}, []behaviour{okAnswer("a")}, extra.String(), Options{Token: "tok"})
		for i, id := range ids {
			res, err := w.pool.Test(t.Context(), id, "m")
			if err != nil || res.Result != "ok" || res.Member != "a" || res.Pool != id || res.Status != 200 {
				t.Fatalf("pool %q: %+v %v", id, res, err)
			}
			if n := w.mocks["a"].calls(); n != i+1 {
				t.Fatalf("pool %q: member a has %d calls, want %d", id, n, i+1)
			}
		}
	})
	t.Run("POOL-14/unknown-model-fails-without-upstream-call", func(t *testing.T) {
		w := newWorld(t, []string{"a"}, []behaviour{okAnswer("a")}, "    models: [{id: m}]\n", Options{})
		res, err := w.pool.Test(t.Context(), "p", "other")
		if err != nil || res.Result != "failed" || res.Status != 404 || !strings.Contains(res.Error, "not offered") || w.mocks["a"].calls() != 0 {
			t.Fatalf("%+v %v", res, err)
		}
	})
}

func TestPoolTestEndpoint(t *testing.T) {
	w := newWorld(t, []string{"a"}, []behaviour{okAnswer("a")}, "", Options{Token: "tok"})
	// post takes the subtest's t, so a failure is reported under its name.
	post := func(t *testing.T, method, path, token string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, w.srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := w.tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sb strings.Builder
		buf := make([]byte, 8192)
		for {
			n, err := resp.Body.Read(buf)
			sb.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp, sb.String()
	}
	for _, tc := range []struct {
		name, method, path, token string
		want                      int
	}{
		{"POOL-20/test-needs-the-token", http.MethodPost, "/pool/p/test?model=m", "", 401},
		{"POOL-20/test-wrong-token", http.MethodPost, "/pool/p/test?model=m", "bad", 401},
		{"POOL-14/test-get-405", http.MethodGet, "/pool/p/test?model=m", "tok", 405},
		{"POOL-14/test-without-model-400", http.MethodPost, "/pool/p/test", "tok", 400},
		{"POOL-14/test-unknown-pool-404", http.MethodPost, "/pool/q/test?model=m", "tok", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if resp, body := post(t, tc.method, tc.path, tc.token); resp.StatusCode != tc.want {
				t.Fatalf("%d %q", resp.StatusCode, body)
			}
		})
	}
	t.Run("POOL-14/test-endpoint-json", func(t *testing.T) {
		resp, body := post(t, http.MethodPost, "/pool/p/test?model=m", "tok")
		var res TestResult
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &res) != nil || res.Result != "ok" || res.Member != "a" || res.Attempts != 1 || res.TTFTMs <= 0 {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		if strings.Contains(body, "SECRET") || strings.Contains(w.logs.String(), "SECRET") {
			t.Fatal("key leaked")
		}
	})
	t.Run("POOL-13/page-served-without-token", func(t *testing.T) {
		resp, body := post(t, http.MethodGet, "/pool/", "")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, "/pool/status") {
			t.Fatalf("%d %q", resp.StatusCode, body[:min(len(body), 200)])
		}
	})
}
