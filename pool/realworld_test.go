package pool_test

// A loopback world for the pool under real channel behaviour (SPEC POOL-7b, POOL-10b, POOL-17, POOL-18, POOL-19): mock channels that
// misbehave like production ones, the pool wired to the proxy's own
// Transport exactly as internal/app/cli wires it, and a client on 127.0.0.1.
// Only the exported API is used, so these tests describe behaviour, not
// the package layout.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/status"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// chanReq is one request a channel received.
type chanReq struct {
	Path string
	Body map[string]any
	Raw  []byte
}

// channel is a mock model channel on 127.0.0.1 that counts requests and
// TCP connections.
type channel struct {
	srv   *httptest.Server
	conns atomic.Int64

	mu     sync.Mutex
	reqs   []chanReq
	handle func(w http.ResponseWriter, r *http.Request, n int, body []byte)
}

func newChannel(t *testing.T, tls bool, h func(w http.ResponseWriter, r *http.Request, n int, body []byte)) *channel {
	c := &channel{handle: h}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		c.mu.Lock()
		n := len(c.reqs)
		c.reqs = append(c.reqs, chanReq{Path: r.URL.Path, Body: body, Raw: raw})
		h := c.handle
		c.mu.Unlock()
		h(w, r, n, raw)
	}))
	c.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.conns.Add(1)
		}
	}
	if tls {
		c.srv.StartTLS()
	} else {
		c.srv.Start()
	}
	t.Cleanup(c.srv.Close)
	return c
}

func (c *channel) calls() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.reqs) }

func (c *channel) req(i int) chanReq { c.mu.Lock(); defer c.mu.Unlock(); return c.reqs[i] }

// rworld is a pool "p" over channels, served on 127.0.0.1 through a proxy
// Engine whose own response timeout is proxyTimeout.
type rworld struct {
	t      *testing.T
	pool   *pool.Pool
	srv    *httptest.Server
	ch     map[string]*channel
	client *http.Client
}

type rconf struct {
	tls          bool   // channels on https:// (httptest certificates)
	api          string // config.APIAnthropic (default) or config.APIOpenAI
	poolExtra    string // YAML under the pool, indented 4 spaces
	proxyTimeout time.Duration
	opts         pool.Options
}

func newRWorld(t *testing.T, rc rconf, names []string, hs ...func(w http.ResponseWriter, r *http.Request, n int, body []byte)) *rworld {
	t.Helper()
	if rc.api == "" {
		rc.api = config.APIAnthropic
	}
	w := &rworld{t: t, ch: map[string]*channel{}}
	var y strings.Builder
	y.WriteString("channels:\n")
	for i, n := range names {
		c := newChannel(t, rc.tls, hs[i])
		w.ch[n] = c
		base := c.srv.URL
		if rc.api == config.APIOpenAI {
			base += "/v1"
		}
		fmt.Fprintf(&y, "  %s: {api: %s, base_url: %q, api_key: sk-test-%s-0123456789}\n", n, rc.api, base, n)
	}
	fmt.Fprintf(&y, "pools:\n  p:\n    members: [%s]\n%s", strings.Join(names, ", "), rc.poolExtra)
	cfg, err := config.ParseConfig([]byte(y.String()), func(string) string { return "" })
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y.String())
	}
	e, err := proxy.NewEngine(proxy.Config{Candidates: []candidate.Candidate{candidate.Direct}, LoopbackDirect: true,
		ResponseTimeout: rc.proxyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	tr := e.PoolRoundTripper() // as internal/app/cli wires the pool
	if rc.tls {
		roots := x509.NewCertPool()
		for _, c := range w.ch {
			roots.AddCert(c.srv.Certificate())
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: roots}
	}
	t.Cleanup(tr.CloseIdleConnections)
	if rc.opts.Transport == nil {
		rc.opts.Transport = tr
	}
	if rc.opts.Logger == nil {
		rc.opts.Logger = slog.New(slog.DiscardHandler)
	}
	w.pool = pool.New(cfg, rc.opts)
	w.srv = httptest.NewServer(w.pool)
	t.Cleanup(w.srv.Close)
	ctr := &http.Transport{}
	t.Cleanup(ctr.CloseIdleConnections)
	w.client = &http.Client{Transport: ctr}
	return w
}

// post sends body to path with session and returns the response (body open).
func (w *rworld) post(ctx context.Context, path, session, body string) *http.Response {
	w.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.srv.URL+path, strings.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", session)
	resp, err := w.client.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	return resp
}

// do is post + read the whole body.
func (w *rworld) do(path, session, body string) (*http.Response, string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := w.post(ctx, path, session, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatalf("read: %v (got %q)", err, b)
	}
	return resp, string(b)
}

func (w *rworld) member(id string) status.MemberStatus {
	for _, m := range w.pool.Status().Pools[0].Members {
		if m.ID == id {
			return m
		}
	}
	w.t.Fatalf("no member %s", id)
	return status.MemberStatus{}
}

// anthropicBody is a Messages request.
func anthropicBody(stream bool) string {
	return fmt.Sprintf(`{"model":"m","max_tokens":64,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)
}

// answerJSON writes a complete non-streamed Anthropic answer from who.
func answerJSON(w http.ResponseWriter, who string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"msg_%s","type":"message","role":"assistant","content":[{"type":"text","text":"hi from %s"}],"usage":{"input_tokens":5,"output_tokens":3}}`, who, who)
}

// ev writes one SSE event in the usual framing and flushes.
func ev(w http.ResponseWriter, name, data string) {
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
	w.(http.Flusher).Flush()
}

func streamHead(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	w.(http.Flusher).Flush()
}

// preamble writes message_start, an empty text block start and a ping.
func preamble(w http.ResponseWriter, who string) {
	ev(w, "message_start", `{"type":"message_start","message":{"id":"msg_`+who+`","type":"message","role":"assistant","content":[],"usage":{"input_tokens":10,"output_tokens":0}}}`)
	ev(w, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	ev(w, "ping", `{"type":"ping"}`)
}

func content(w http.ResponseWriter, who string) {
	ev(w, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi from `+who+`"}}`)
	ev(w, "content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev(w, "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`)
	ev(w, "message_stop", `{"type":"message_stop"}`)
}

// okChannel answers a streamed request like a healthy channel, else JSON.
func okChannel(who string) func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
	return func(w http.ResponseWriter, r *http.Request, _ int, body []byte) {
		if !strings.Contains(string(body), `"stream":true`) {
			answerJSON(w, who)
			return
		}
		streamHead(w)
		preamble(w, who)
		content(w, who)
	}
}

// eventNames lists the "event:" names of an SSE body (any line ending).
func eventNames(body string) []string {
	var out []string
	body = strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\r", "\n")
	for _, line := range strings.Split(body, "\n") {
		if name, ok := strings.CutPrefix(line, "event:"); ok {
			out = append(out, strings.TrimSpace(name))
		}
	}
	return out
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func chatBody(stream bool) string {
	return fmt.Sprintf(`{"model":"m","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)
}

func okChat(who string) func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
	return func(w http.ResponseWriter, r *http.Request, _ int, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c_%s","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi from %s"},"finish_reason":"stop"}]}`, who, who)
	}
}

// reload switches the world's pool to the configuration y.
func reload(t *testing.T, w *rworld, y string) {
	t.Helper()
	cfg, err := config.ParseConfig([]byte(y), func(string) string { return "" })
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y)
	}
	w.pool.Reload(cfg)
}
