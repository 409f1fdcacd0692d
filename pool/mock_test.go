package pool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/status"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// secretFor is the channel key of a mock member; tests grep for "SECRET".
func secretFor(name string) string { return "sk-ant-SECRET-" + name + "-0123456789" }

// recorded is one request a mock channel received.
type recorded struct {
	Path, Query string
	Target      string // the request-target of the request line, as sent (RFC 9112 §3.2)
	Header      http.Header
	Body        map[string]any
}

// behaviour answers the n-th (0-based) request of a mock channel.
type behaviour func(w http.ResponseWriter, r *http.Request, n int)

// mockChannel is an Anthropic-like upstream on 127.0.0.1.
type mockChannel struct {
	name string
	srv  *httptest.Server

	mu      sync.Mutex
	reqs    []recorded
	behave  behaviour
	ctxDone chan string // receives the member name when a request's context ends early
}

func newMock(t *testing.T, name string, b behaviour) *mockChannel {
	m := &mockChannel{name: name, behave: b, ctxDone: make(chan string, 16)}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		m.mu.Lock()
		n := len(m.reqs)
		m.reqs = append(m.reqs, recorded{Path: r.URL.Path, Query: r.URL.RawQuery, Target: r.RequestURI, Header: r.Header.Clone(), Body: body})
		b := m.behave
		m.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(raw))
		b(w, r.WithContext(context.WithValue(r.Context(), bodyKey{}, raw)), n)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *mockChannel) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reqs)
}

func (m *mockChannel) req(i int) recorded {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs[i]
}

func (m *mockChannel) set(b behaviour) {
	m.mu.Lock()
	m.behave = b
	m.mu.Unlock()
}

// sseWrite writes one event and flushes.
func sseWrite(w http.ResponseWriter, name string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	w.(http.Flusher).Flush()
}

func sseHead(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
}

func messageStart(w http.ResponseWriter, who string, u map[string]any) {
	if u == nil {
		u = map[string]any{"input_tokens": 10, "output_tokens": 0}
	}
	sseWrite(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_" + who, "type": "message", "role": "assistant", "content": []any{}, "usage": u}})
	sseWrite(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	sseWrite(w, "ping", map[string]any{"type": "ping"})
}

func textDelta(w http.ResponseWriter, text string) {
	sseWrite(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "text_delta", "text": text}})
}

func messageEnd(w http.ResponseWriter) {
	sseWrite(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sseWrite(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn"},
		"usage": map[string]any{"output_tokens": 1}})
	sseWrite(w, "message_stop", map[string]any{"type": "message_stop"})
}

// okAnswer answers like a healthy channel named who, streamed or not.
func okAnswer(who string) behaviour {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		var body struct {
			Stream bool `json:"stream"`
		}
		m := recordedBody(r)
		_ = json.Unmarshal(m, &body)
		if strings.HasSuffix(r.URL.Path, "/count_tokens") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"input_tokens": 42}`)
			return
		}
		if !body.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"msg_%s","type":"message","role":"assistant","content":[{"type":"text","text":"hi from %s"}],"usage":{"input_tokens":5,"cache_read_input_tokens":15,"output_tokens":3}}`, who, who)
			return
		}
		sseHead(w)
		messageStart(w, who, map[string]any{"input_tokens": 10, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 0})
		textDelta(w, "hi from "+who)
		messageEnd(w)
	}
}

// recordedBody returns the body the mock handler already consumed; mocks
// stash it in the request context.
func recordedBody(r *http.Request) []byte {
	if b, ok := r.Context().Value(bodyKey{}).([]byte); ok {
		return b
	}
	return nil
}

type bodyKey struct{}

func statusAnswer(code int, hdr map[string]string, body string) behaviour {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// waitCtx blocks until the request context ends (or 10 s) and reports it.
func (m *mockChannel) waitCtx(r *http.Request) {
	select {
	case <-r.Context().Done():
		m.ctxDone <- m.name
	case <-time.After(10 * time.Second):
	}
}

// world is a pool in front of mock channels, served on 127.0.0.1.
type world struct {
	t     *testing.T
	pool  *Pool
	srv   *httptest.Server
	mocks map[string]*mockChannel
	logs  *testkit.LogBuffer
	now   *testkit.Clock
	tr    *http.Transport
}

// newWorld builds mocks for names (in member order) and a pool "p" over
// them; poolExtra is YAML added under the pool (indented 4 spaces).
func newWorld(t *testing.T, names []string, behaviours []behaviour, poolExtra string, opts Options) *world {
	return newWorldAPI(t, config.APIAnthropic, names, behaviours, nil, poolExtra, opts)
}

// newWorldAPI is newWorld for channels of flavour api; chanExtra adds YAML
// flow-mapping entries to a channel (e.g. "models: [{id: m, input: [text]}]").
func newWorldAPI(t *testing.T, api string, names []string, behaviours []behaviour, chanExtra map[string]string, poolExtra string, opts Options) *world {
	w := &world{t: t, mocks: map[string]*mockChannel{}, logs: &testkit.LogBuffer{},
		now: testkit.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	var y strings.Builder
	y.WriteString("channels:\n")
	for i, n := range names {
		m := newMock(t, n, behaviours[i])
		w.mocks[n] = m
		extra := ""
		if chanExtra[n] != "" {
			extra = ", " + chanExtra[n]
		}
		base := m.srv.URL
		if api == config.APIOpenAI {
			base += "/v1" // the usual OpenAI-style base URL (memberURL)
		}
		fmt.Fprintf(&y, "  %s: {api: %s, base_url: %q, api_key_env: KEY_%s%s}\n", n, api, base, strings.ToUpper(n), extra)
	}
	fmt.Fprintf(&y, "pools:\n  p:\n    members: [%s]\n%s", strings.Join(names, ", "), poolExtra)
	cfg, err := config.ParseConfig([]byte(y.String()), func(k string) string { return secretFor(strings.ToLower(strings.TrimPrefix(k, "KEY_"))) })
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y.String())
	}
	w.tr = &http.Transport{}
	t.Cleanup(w.tr.CloseIdleConnections)
	if opts.Transport == nil {
		opts.Transport = w.tr
	}
	if opts.Now == nil {
		opts.Now = w.now.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	w.pool = New(cfg, opts)
	w.srv = httptest.NewServer(w.pool)
	t.Cleanup(w.srv.Close)
	return w
}

// client is a fresh HTTP client per world (idle connections closed at cleanup).
func (w *world) do(ctx context.Context, path string, hdr map[string]string, body string) *http.Response {
	w.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.srv.URL+path, strings.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := w.tr.RoundTrip(req)
	if err != nil {
		w.t.Fatal(err)
	}
	return resp
}

// call makes a request for session and returns status, headers and body.
func (w *world) call(session string, stream bool) (*http.Response, string) {
	w.t.Helper()
	resp := w.do(context.Background(), "/pool/p/v1/messages", map[string]string{"X-Claude-Code-Session-Id": session}, msgBody("m", stream))
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	return resp, string(b)
}

func msgBody(model string, stream bool) string {
	return fmt.Sprintf(`{"model": %q, "max_tokens": 1024, "stream": %v, "system": "be brief",
 "messages": [{"role": "user", "content": [{"type": "text", "text": "say ok"}]}]}`, model, stream)
}

// events parses an SSE body into event names (independent of wire/sse.go).
func events(body string) []string {
	var out []string
	for _, block := range strings.Split(body, "\n\n") {
		for _, line := range strings.Split(block, "\n") {
			if name, ok := strings.CutPrefix(line, "event: "); ok {
				out = append(out, name)
			}
		}
	}
	return out
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func (w *world) member(id string) status.MemberStatus {
	for _, m := range w.pool.Status().Pools[0].Members {
		if m.ID == id {
			return m
		}
	}
	w.t.Fatalf("no member %s", id)
	return status.MemberStatus{}
}
