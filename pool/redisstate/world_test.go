package redisstate

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// upstream is one loopback Anthropic channel: it answers a non-streamed
// message, or 429 with Retry-After while limited.
type upstream struct {
	srv     *httptest.Server
	calls   atomic.Int64
	limited atomic.Bool
	gate    atomic.Pointer[func()] // called before answering (nil: none)
}

func newUpstream(t testing.TB) *upstream {
	u := &upstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.calls.Add(1)
		if g := u.gate.Load(); g != nil {
			(*g)()
		}
		w.Header().Set("Content-Type", "application/json")
		if u.limited.Load() {
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(429)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
			return
		}
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, streamAnswer)
			return
		}
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// streamAnswer is a whole streamed Anthropic answer ("ok").
const streamAnswer = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n" +
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n" +
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

// Secrets the key scan looks for (SPEC POOL-23: no prompt, key or raw
// session id in the store).
const (
	channelKeyMark = "sk-test-CHANNELKEY"
	promptMark     = "PROMPT-TEXT-ZQX"
	sessionMark    = "raw-session-"
)

// team is N pool instances sharing one State URL (or memory when url is
// "").
type team struct {
	ups    map[string]*upstream
	cfg    *config.Config
	pools  []*pool.Pool
	stores []*Store
	clock  *testkit.Clock
}

func newTeam(t testing.TB, url, name string, n int, strategy string) *team {
	return newTeamWith(t, url, name, n, strategy, stateTimeout)
}

// newTeamWith is newTeam with the state deadline timeout.
func newTeamWith(t testing.TB, url, name string, n int, strategy string, timeout time.Duration) *team {
	tm := &team{ups: map[string]*upstream{}, clock: testkit.NewClock(time.Now())}
	var b strings.Builder
	b.WriteString("channels:\n")
	for _, m := range []string{"a", "b", "c"} {
		tm.ups[m] = newUpstream(t)
		fmt.Fprintf(&b, "  %s: {api: anthropic, base_url: %q, api_key: %s-%s}\n", m, tm.ups[m].srv.URL, channelKeyMark, m)
	}
	fmt.Fprintf(&b, "pools:\n  team: {strategy: %s, members: [a, b, c]}\n", strategy)
	if url != "" {
		fmt.Fprintf(&b, "state: {url: %q, name: %s}\n", url, name)
	}
	cfg, err := config.ParseConfig([]byte(b.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	tm.cfg = cfg
	for i := 0; i < n; i++ {
		opts := pool.Options{Now: tm.clock.Now}
		if url != "" {
			st, err := New(Options{URL: url, Prefix: config.StatePrefix(cfg), Timeout: timeout, Instance: fmt.Sprintf("i%d", i+1), Config: cfg, Now: tm.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			tm.stores = append(tm.stores, st)
			opts.State = st
		}
		p := pool.New(cfg, opts)
		tm.pools = append(tm.pools, p)
		t.Cleanup(func() { _ = p.Close() })
	}
	return tm
}

// stateTimeout is the state deadline the tests run with.
const stateTimeout = 100 * time.Millisecond

// call sends one non-streamed message of session through instance i and
// returns the member that answered and how long the call took.
func (tm *team) call(t testing.TB, i int, session string) (string, time.Duration) {
	t.Helper()
	return tm.send(t, i, session, false)
}

// send is call, streamed when stream is set (the answer is read whole).
func (tm *team) send(t testing.TB, i int, session string, stream bool) (string, time.Duration) {
	t.Helper()
	body := `{"model":"m","max_tokens":16,"stream":` + fmt.Sprint(stream) + `,"messages":[{"role":"user","content":"` + promptMark + `"}]}`
	r := httptest.NewRequest("POST", "/pool/team/v1/messages", strings.NewReader(body))
	r.Host = "127.0.0.1"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-Session-Id", sessionMark+session)
	w := httptest.NewRecorder()
	start := time.Now()
	tm.pools[i].ServeHTTP(w, r)
	took := time.Since(start)
	if w.Code != 200 || (stream && !strings.Contains(w.Body.String(), "message_stop")) {
		t.Fatalf("instance %d session %s: status %d: %s", i+1, session, w.Code, w.Body.String())
	}
	return w.Header().Get("X-Pool-Member"), took
}

// firstCallsGate holds every upstream answer until n requests have arrived
// (or 5 s passed), so n first calls are surely concurrent.
func firstCallsGate(tm *team, n int) {
	var mu sync.Mutex
	arrived := 0
	open := make(chan struct{})
	for _, u := range tm.ups {
		g := func() {
			mu.Lock()
			if arrived++; arrived == n {
				close(open)
			}
			mu.Unlock()
			select {
			case <-open:
			case <-time.After(5 * time.Second):
			}
		}
		u.gate.Store(&g)
	}
}
