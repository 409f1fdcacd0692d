package pool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// testSession is the session shown for test calls in status records.
const testSession = "test"

// MaxTestDuration bounds one test call (the whole stream).
const MaxTestDuration = 5 * time.Minute

// ErrNoPool is returned by Test for a pool id that is not configured.
var ErrNoPool = errors.New("no such pool")

// TestResult is the outcome of one test call through a pool,
// as returned by Test and by POST /pool/{pool}/test?model=M (JSON).
type TestResult struct {
	Pool  string `json:"pool"`
	Model string `json:"model"`
	// Member is the member that answered ("" when none did).
	Member string `json:"member,omitempty"`
	// TTFTMs is the time from sending the call to the first visible output
	// (the commit point) in ms; 0 when there was none.
	TTFTMs int64 `json:"ttft_ms"`
	// TotalMs is the time until the stream (or error) ended, in ms.
	TotalMs int64 `json:"total_ms"`
	// Attempts counts the members tried, the answering one included.
	Attempts int `json:"attempts"`
	// Failed lists the members that failed (class, status, scrubbed message).
	Failed []neutral.Attempt `json:"failed,omitempty"`
	// Status is the HTTP status the pool answered with.
	Status int `json:"status"`
	// Result is "ok" (a complete answer) or "failed".
	Result string `json:"result"`
	// Class is the failure class when Result is "failed".
	Class string `json:"class,omitempty"`
	// Error is a short reason when Result is "failed"; no key, no body.
	Error string `json:"error,omitempty"`
}

// probeKey marks a request context as a test call; only Test sets it (a
// context value cannot come from the wire).
type probeKey struct{}

// probe receives the call's record (call.record).
type probe struct {
	// member, when set, is the only member the call may go to (a member
	// test from the editor).
	member   string
	mu       sync.Mutex
	rec      *balance.CallRecord
	attempts []neutral.Attempt
}

func (pr *probe) set(rec balance.CallRecord, attempts []neutral.Attempt) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.rec = &rec
	pr.attempts = append([]neutral.Attempt(nil), attempts...)
}

// testBody is the request a test sends: one short streamed question in the
// pool's API shape. No output limit is set for OpenAI (reasoning models
// reject max_tokens, and a limit can end a reasoning answer before output).
func testBody(api, model string) (path string, body []byte) {
	m, _ := json.Marshal(model)
	const q = `"Reply with the single word: ok"`
	if api == config.APIOpenAI || api == config.APIOpenAIChat {
		return "/v1/chat/completions", []byte(`{"model":` + string(m) + `,"stream":true,"messages":[{"role":"user","content":` + q + `}]}`)
	}
	return "/v1/messages", []byte(`{"model":` + string(m) + `,"max_tokens":64,"stream":true,"messages":[{"role":"user","content":` + q + `}]}`)
}

// Test sends one real streaming call for model through pool (SPEC POOL-14),
// in process through ServeHTTP, so it takes the pool's normal path —
// assignment, cooldowns, failover, status record (session "test") — except
// that no sticky binding is recorded. It reports the member hit, the time to
// first token, the attempts and the result. Errors: ErrNoPool for an
// unknown pool, ctx's error when ctx ends before the call starts. A failed
// call is not an error: Result says "failed" with Class and Error. The call
// is bounded by MaxTestDuration.
func (p *Pool) Test(ctx context.Context, pool, model string) (TestResult, error) {
	return p.TestMember(ctx, pool, model, "")
}

// TestMember is Test restricted to one member of the pool (the editor's
// per-member test): one real streamed call to that member only, never failed
// over to another; member "" is Test. A member that is not in the pool, or
// cannot serve the model, is a failed result (400, class bad_request) naming
// why.
func (p *Pool) TestMember(ctx context.Context, pool, model, member string) (TestResult, error) {
	res := TestResult{Pool: pool, Model: model}
	cfg, _ := p.config()
	pc := cfg.Pool(pool)
	if pc == nil {
		return res, fmt.Errorf("%w: %q", ErrNoPool, pool)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(ctx, MaxTestDuration)
	defer cancel()
	pr := &probe{member: member}
	path, body := testBody(pc.API, model)
	// The id is escaped as a path segment: the request is parsed as a URL,
	// and an id the configuration allows ("50%off", "a?b", a control byte)
	// would otherwise fail to parse or name another pool.
	req, err := http.NewRequestWithContext(context.WithValue(ctx, probeKey{}, pr), http.MethodPost,
		"/pool/"+url.PathEscape(pool)+path, bytes.NewReader(body))
	if err != nil {
		return res, err
	}
	req.Host = "localhost" // in process: passes the DNS-rebinding guard
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	if p.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+p.opts.Token)
	}
	rec := &testRecorder{header: http.Header{}, start: time.Now()}
	p.ServeHTTP(rec, req)
	total := time.Since(rec.start)

	res.TotalMs = max(1, total.Milliseconds())
	res.Status = rec.status
	if res.Status == 0 {
		res.Status = http.StatusOK
	}
	res.Member = rec.header.Get("X-Pool-Member")
	if res.Member == "none" {
		res.Member = ""
	}
	res.Attempts, _ = strconv.Atoi(rec.header.Get("X-Pool-Attempts"))
	pr.mu.Lock()
	r, attempts := pr.rec, pr.attempts
	pr.mu.Unlock()
	res.Failed = append(res.Failed, attempts...)
	switch {
	case r == nil: // answered before a call began (unknown model, bad request…)
		_, msg := testFlavour(pc).ParseError(rec.body.Bytes())
		res.Result, res.Class, res.Error = "failed", balance.ClassifyStatus(res.Status, "", msg), msg
	case r.Class == "" && res.Status/100 == 2:
		res.Result = "ok"
		if !rec.first.IsZero() {
			res.TTFTMs = max(1, rec.first.Sub(rec.start).Milliseconds())
		}
	default:
		res.Result, res.Class = "failed", r.Class
		if len(attempts) > 0 {
			res.Error = attempts[len(attempts)-1].Message
		}
		if res.Error == "" {
			_, res.Error = testFlavour(pc).ParseError(rec.body.Bytes())
		}
		if res.Member != "" && !rec.first.IsZero() { // failed after the commit point
			res.TTFTMs = max(1, rec.first.Sub(rec.start).Milliseconds())
		}
	}
	return res, nil
}

// testRecorder is the in-process ResponseWriter of a test call: it notes
// when the first body byte is written (for a stream that is the commit
// point, i.e. the first visible output) and keeps up to 1 MiB of body.
type testRecorder struct {
	header http.Header
	status int
	start  time.Time
	first  time.Time
	body   bytes.Buffer
}

func (t *testRecorder) Header() http.Header { return t.header }

func (t *testRecorder) WriteHeader(code int) {
	if t.status == 0 {
		t.status = code
	}
}

func (t *testRecorder) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	if t.first.IsZero() && len(b) > 0 {
		t.first = time.Now()
	}
	if t.body.Len() < 1<<20 {
		t.body.Write(b)
	}
	return len(b), nil
}

func (t *testRecorder) Flush() {}

// serveTest answers POST /pool/{pool}/test?model=M[&member=X] with Test's TestResult as
// JSON (200 whatever the call's outcome); 405 for other methods, 400 without
// a model. The token rule of /pool/{pool}/… applies (checked by ServeHTTP).
func (p *Pool) serveTest(w http.ResponseWriter, r *http.Request, fl api.Flavour, pool string) {
	if r.Method != http.MethodPost {
		api.WriteError(w, fl, http.StatusMethodNotAllowed, "use POST /pool/"+pool+"/test?model=MODEL", nil)
		return
	}
	model := r.URL.Query().Get("model")
	if model == "" {
		api.WriteError(w, fl, http.StatusBadRequest, "query parameter model is required", nil)
		return
	}
	res, err := p.TestMember(r.Context(), pool, model, r.URL.Query().Get("member"))
	if err != nil {
		api.WriteError(w, fl, http.StatusNotFound, err.Error(), nil)
		return
	}
	p.log.Info("pool test", "pool", pool, "member", res.Member, "result", res.Result, "class", res.Class, "ttft_ms", res.TTFTMs)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(res)
}

// onlyMember narrows a member test to its member, saying why when
// it is not in the pool or cannot serve the call.
func onlyMember(eligible, skipped []string, pc *config.PoolConfig, member string) ([]string, []string) {
	if slices.Contains(eligible, member) {
		return []string{member}, nil
	}
	if !slices.Contains(pc.Members, member) {
		return nil, []string{member + ": not a member of this pool"}
	}
	for _, s := range skipped {
		if strings.HasPrefix(s, member+": ") {
			return nil, []string{s}
		}
	}
	return nil, []string{member + ": cannot serve this call"}
}
