package editor_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/mockllm"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// The secrets of the test files: none may appear in any response.
const (
	secretKey  = "sk-literal-SECRET-0123456789"
	envKey     = "sk-env-SECRET-9876543210"
	urlPass    = "url-SECRET-pw"
	poolToken  = "editor-token"
	listModels = `{"data":[{"id":"deepseek-flash","context_window":131072},{"id":"shared-model","max_tokens":8192}]}`
)

// channelServer is a model channel on loopback: GET …/models answers list,
// everything else is a mockllm channel of api.
func channelServer(t *testing.T, api, list string) (*httptest.Server, *mockllm.Channel) {
	t.Helper()
	ch := &mockllm.Channel{API: api}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, list)
			return
		}
		ch.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

// countingTransport counts the requests the pool's Transport carried.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// world is a pool with an editor on a config file in a temp dir.
type world struct {
	t    *testing.T
	path string
	srv  *httptest.Server
	p    *pool.Pool
	tr   *countingTransport
	// seen collects every response body, checked for secrets at the end.
	seen *strings.Builder
	mu   sync.Mutex // guards seen
}

func getenv(k string) string {
	if k == "ENV_KEY" {
		return envKey
	}
	return ""
}

// newWorld writes yaml (mode) and serves a pool on it with the token.
func newWorld(t *testing.T, yaml string, mode os.FileMode) *world {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadConfig(path, getenv)
	if err != nil {
		t.Fatalf("test config: %v", err)
	}
	return serveWorld(t, path, cfg)
}

// serveWorld serves a pool of cfg with an editor on path (which need not
// exist) and the token.
func serveWorld(t *testing.T, path string, cfg *config.Config) *world {
	t.Helper()
	w := &world{t: t, path: path, tr: &countingTransport{}, seen: &strings.Builder{}}
	w.p = pool.New(cfg, pool.Options{Token: poolToken, ConfigFile: path, Getenv: getenv, Transport: w.tr})
	w.srv = httptest.NewServer(w.p)
	t.Cleanup(func() {
		w.srv.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		for _, s := range []string{secretKey, envKey, urlPass} {
			if strings.Contains(w.seen.String(), s) {
				t.Errorf("POOL-15: a response carried the secret %q", s)
			}
		}
	})
	return w
}

// do sends a request with the token (unless headers say otherwise) and
// returns the status, headers and body.
func (w *world) do(method, path, body string, h map[string]string) (int, http.Header, string) {
	w.t.Helper()
	req, err := http.NewRequest(method, w.srv.URL+path, strings.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+poolToken)
	for k, v := range h {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	w.mu.Lock()
	w.seen.Write(b)
	for _, vs := range resp.Header {
		w.seen.WriteString(strings.Join(vs, " "))
	}
	w.mu.Unlock()
	return resp.StatusCode, resp.Header, string(b)
}

// getConfig is GET /pool/config decoded.
type getDoc struct {
	Version string         `json:"version"`
	Mode    string         `json:"mode"`
	YAML    string         `json:"yaml"`
	Doc     map[string]any `json:"doc"`
}

func (w *world) get() getDoc {
	w.t.Helper()
	st, _, body := w.do("GET", "/pool/config", "", nil)
	if st != 200 {
		w.t.Fatalf("GET /pool/config: %d %s", st, body)
	}
	var g getDoc
	if err := json.Unmarshal([]byte(body), &g); err != nil {
		w.t.Fatal(err)
	}
	return g
}

func (w *world) file() string {
	w.t.Helper()
	b, err := os.ReadFile(w.path)
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

func (w *world) put(version string, doc any) (int, string) {
	w.t.Helper()
	var body string
	switch d := doc.(type) {
	case string:
		body = d
	default:
		b, _ := json.Marshal(d)
		body = string(b)
	}
	st, _, out := w.do("PUT", "/pool/config", body, map[string]string{"If-Match": `"` + version + `"`})
	return st, out
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func mustSub(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("missing %q in:\n%s", sub, s)
	}
}

var _ = fmt.Sprint
