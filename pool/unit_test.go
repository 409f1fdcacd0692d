package pool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

func TestCooldownRules(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := 30 * time.Second
	t.Run("POOL-10/base-then-growth-x2-capped-10x", func(t *testing.T) {
		c := newCooldowns()
		now := t0
		want := []time.Duration{30, 60, 120, 240, 300, 300}
		for i, w := range want {
			until := c.fail("a", config.ClassServer, base, 0, now)
			if got := until.Sub(now); got != w*time.Second {
				t.Fatalf("failure %d: cooldown %v, want %v", i, got, w*time.Second)
			}
			now = until.Add(time.Second) // fails again right after the cooldown
		}
	})
	t.Run("POOL-10/success-resets-growth", func(t *testing.T) {
		c := newCooldowns()
		u := c.fail("a", config.ClassServer, base, 0, t0)
		u = c.fail("a", config.ClassServer, base, 0, u)
		c.succeed("a")
		if got := c.fail("a", config.ClassServer, base, 0, u.Add(time.Second)); got.Sub(u.Add(time.Second)) != base {
			t.Fatalf("after success: %v", got.Sub(u))
		}
		if _, _, cooling := c.until("a", u.Add(time.Second)); !cooling {
			t.Fatal("not cooling")
		}
	})
	t.Run("POOL-10/longest-deadline-wins", func(t *testing.T) {
		c := newCooldowns()
		c.fail("a", config.ClassAuth, 600*time.Second, 0, t0)
		c.fail("a", config.ClassServer, base, 0, t0.Add(time.Second))
		until, class, _ := c.until("a", t0.Add(2*time.Second))
		if !until.Equal(t0.Add(600*time.Second)) || class != config.ClassAuth {
			t.Fatalf("%v %s", until, class)
		}
		c.fail("a", config.ClassRateLimit, 60*time.Second, 900*time.Second, t0.Add(3*time.Second))
		if until, class, _ := c.until("a", t0.Add(4*time.Second)); !until.Equal(t0.Add(903*time.Second)) || class != config.ClassRateLimit {
			t.Fatalf("%v %s", until, class)
		}
	})
	t.Run("POOL-10/late-failure-starts-at-base", func(t *testing.T) {
		c := newCooldowns()
		u := c.fail("a", config.ClassServer, base, 0, t0)
		later := u.Add(time.Hour)
		if got := c.fail("a", config.ClassServer, base, 0, later); got.Sub(later) != base {
			t.Fatalf("%v", got.Sub(later))
		}
	})
	t.Run("POOL-10/bad-request-no-cooldown", func(t *testing.T) {
		c := newCooldowns()
		if u := c.fail("a", config.ClassBadRequest, config.DefaultCooldown.Base(config.ClassBadRequest), 0, t0); !u.IsZero() {
			t.Fatal(u)
		}
	})
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status   int
		typ, msg string
		want     string
	}{
		{401, "authentication_error", "invalid x-api-key", config.ClassAuth},
		{403, "permission_error", "forbidden", config.ClassAuth},
		{403, "", "insufficient balance", config.ClassQuota},
		{402, "", "", config.ClassQuota},
		{429, "rate_limit_error", "slow down", config.ClassRateLimit},
		{429, "", "You exceeded your current quota, check billing", config.ClassQuota},
		{500, "api_error", "", config.ClassServer},
		{529, "overloaded_error", "Overloaded", config.ClassServer},
		{503, "", "", config.ClassServer},
		{408, "", "", config.ClassTimeout},
		{400, "invalid_request_error", "max_tokens too large", config.ClassBadRequest},
		{413, "request_too_large", "", config.ClassBadRequest},
		{422, "", "bad", config.ClassBadRequest},
		{404, "not_found_error", "model: x not found", config.ClassModelNotFound},
		{400, "invalid_request_error", "The model `foo` does not exist", config.ClassModelNotFound},
		{404, "not_found_error", "no route", config.ClassBadRequest},
	} {
		t.Run("POOL-10/"+tc.want+"/"+http.StatusText(tc.status), func(t *testing.T) {
			if got := classifyStatus(tc.status, tc.typ, tc.msg); got != tc.want {
				t.Fatalf("classify(%d,%q,%q) = %s, want %s", tc.status, tc.typ, tc.msg, got, tc.want)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"POOL-10/retry-after-seconds", map[string]string{"Retry-After": "4"}, 4 * time.Second},
		{"POOL-10/retry-after-ms-wins", map[string]string{"Retry-After": "4", "retry-after-ms": "1500"}, 1500 * time.Millisecond},
		{"POOL-10/retry-after-http-date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"POOL-10/anthropic-reset-latest", map[string]string{"anthropic-ratelimit-requests-reset": now.Add(10 * time.Second).Format(time.RFC3339),
			"anthropic-ratelimit-tokens-reset": now.Add(20 * time.Second).Format(time.RFC3339)}, 20 * time.Second},
		{"POOL-10/absent", nil, 0},
		{"POOL-10/garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"POOL-10/capped", map[string]string{"Retry-After": "999999"}, time.Hour},
		{"POOL-10/huge-seconds-no-overflow", map[string]string{"Retry-After": "99999999999"}, time.Hour},
		{"POOL-10/huge-ms-no-overflow", map[string]string{"retry-after-ms": "1e20"}, time.Hour},
		{"POOL-10/inf-ms-capped", map[string]string{"retry-after-ms": "Inf"}, time.Hour},
		{"POOL-10/nan-ms-ignored", map[string]string{"retry-after-ms": "NaN", "Retry-After": "2"}, 2 * time.Second},
		{"POOL-10/far-http-date-capped", map[string]string{"Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT"}, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.h {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != tc.want {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
}

func TestSessionIdentity(t *testing.T) {
	ci := &callInfo{MetadataSession: "meta", PromptCacheKey: "pck", ContentHash: "content:x"}
	for _, tc := range []struct {
		name string
		h    map[string]string
		ci   *callInfo
		want string
	}{
		{"POOL-5/x-session-id-first", map[string]string{"X-Session-Id": "xs", "X-Claude-Code-Session-Id": "cc"}, ci, "xs"},
		{"POOL-5/claude-header", map[string]string{"X-Claude-Code-Session-Id": "cc", "session-id": "cx"}, ci, "cc"},
		{"POOL-5/claude-metadata", map[string]string{"session-id": "cx"}, ci, "meta"},
		{"POOL-5/codex-header", map[string]string{"session_id": "cx"}, &callInfo{PromptCacheKey: "pck"}, "cx"},
		{"POOL-5/codex-prompt-cache-key", map[string]string{"x-session-affinity": "oc"}, &callInfo{PromptCacheKey: "pck"}, "pck"},
		{"POOL-5/opencode", map[string]string{"x-opencode-session": "oc"}, &callInfo{ContentHash: "content:x"}, "oc"},
		{"POOL-5/amp", map[string]string{"X-Amp-Thread-Id": "amp"}, &callInfo{ContentHash: "content:x"}, "amp"},
		{"POOL-5/content-hash-last", nil, &callInfo{ContentHash: "content:x"}, "content:x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.h {
				h.Set(k, v)
			}
			if got, _ := sessionIdentity(h, tc.ci); got != tc.want {
				t.Fatalf("got %q want %q", got, tc.want)
			}
		})
	}
	t.Run("POOL-5/metadata-user-id-forms", func(t *testing.T) {
		if got := claudeSessionFromUserID(`{"device_id":"d","account_uuid":"","session_id":"e058fb67"}`); got != "e058fb67" {
			t.Fatal(got)
		}
		if got := claudeSessionFromUserID("user_abc_account_1234_session_9f1c-77"); got != "9f1c-77" {
			t.Fatal(got)
		}
	})
	t.Run("POOL-5/content-hash-whole-first-message-ignores-cache-control", func(t *testing.T) {
		parse := func(body string) string {
			ci, err := anthropicFlavour{}.ParseRequest(endpoint{Kind: epGenerate}, []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			return ci.ContentHash
		}
		a := parse(`{"model":"m","system":"s","messages":[{"role":"user","content":[{"type":"text","text":"CLAUDE.md … task A"}]}]}`)
		b := parse(`{"model":"m","system":"s","messages":[{"role":"user","content":[{"type":"text","text":"CLAUDE.md … task B"}]}]}`)
		a2 := parse(`{"model":"m","system":"s","messages":[{"role":"user","content":[{"type":"text","text":"CLAUDE.md … task A","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","content":"x"},{"role":"user","content":"next"}]}`)
		if a == b || a != a2 || a == "" {
			t.Fatalf("a=%s b=%s a2=%s", a, b, a2)
		}
	})
	t.Run("POOL-13b/session-hash-short-and-opaque", func(t *testing.T) {
		h := sessionHash("e058fb67-a914-4ca1-b1db-49a67e38509e")
		if len(h) != 12 || strings.Contains("e058fb67-a914-4ca1-b1db-49a67e38509e", h) {
			t.Fatal(h)
		}
	})
}

func TestAttemptOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cool := map[string]time.Time{"b": t0.Add(20 * time.Second), "c": t0.Add(5 * time.Second)}
	until := func(m string) (time.Time, bool) { u, ok := cool[m]; return u, ok }
	t.Run("POOL-11/hot-first-from-primary-then-cooling-by-recovery", func(t *testing.T) {
		if got := strings.Join(attemptOrder([]string{"a", "b", "c", "d"}, "d", until), ","); got != "d,a,c,b" {
			t.Fatal(got)
		}
	})
	t.Run("POOL-11/all-cooling-earliest-recovery-first", func(t *testing.T) {
		if got := strings.Join(attemptOrder([]string{"b", "c"}, "b", until), ","); got != "c,b" {
			t.Fatal(got)
		}
	})
}

func TestRewriteKeepsBytes(t *testing.T) {
	body := `{"system":"x <b>&", "model" : "flash", "output_config":{"effort":"max"},"stream":true}`
	ci, err := anthropicFlavour{}.ParseRequest(endpoint{Kind: epGenerate}, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("POOL-2/model-spliced", func(t *testing.T) {
		out, err := anthropicFlavour{}.RewriteBody(ci, "deepseek-v4.1-flash", "")
		if err != nil || string(out) != `{"system":"x <b>&", "model" : "deepseek-v4.1-flash", "output_config":{"effort":"max"},"stream":true}` {
			t.Fatalf("%s %v", out, err)
		}
	})
	t.Run("POOL-12/effort-mapped", func(t *testing.T) {
		out, err := anthropicFlavour{}.RewriteBody(ci, "t", "high")
		var v struct {
			OutputConfig struct{ Effort string } `json:"output_config"`
			Model        string
		}
		if err != nil || json.Unmarshal(out, &v) != nil || v.OutputConfig.Effort != "high" || v.Model != "t" {
			t.Fatalf("%s %v", out, err)
		}
	})
}

func TestWatcherCommitPoint(t *testing.T) {
	for _, tc := range []struct {
		name, ev, data string
		want           verdict
	}{
		{"POOL-7/message-start-is-preamble", "message_start", `{"type":"message_start","message":{"usage":{"input_tokens":3}}}`, vPreamble},
		{"POOL-7/empty-text-block-is-preamble", "content_block_start", `{"type":"content_block_start","content_block":{"type":"text","text":""}}`, vPreamble},
		{"POOL-7/tool-use-start-is-visible", "content_block_start", `{"type":"content_block_start","content_block":{"type":"tool_use","id":"t","name":"x","input":{}}}`, vVisible},
		{"POOL-7/text-delta-visible", "content_block_delta", `{"type":"content_block_delta","delta":{"type":"text_delta","text":"h"}}`, vVisible},
		{"POOL-7/empty-text-delta-preamble", "content_block_delta", `{"type":"content_block_delta","delta":{"type":"text_delta","text":""}}`, vPreamble},
		{"POOL-7/thinking-delta-visible", "content_block_delta", `{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":"hm"}}`, vVisible},
		{"POOL-7/json-delta-visible", "content_block_delta", `{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{\""}}`, vVisible},
		{"POOL-7/signature-delta-preamble", "content_block_delta", `{"type":"content_block_delta","delta":{"type":"signature_delta","signature":"abc"}}`, vPreamble},
		{"POOL-7/ping-preamble", "ping", `{"type":"ping"}`, vPreamble},
		{"POOL-7/error-event", "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, vError},
		{"POOL-7/stop", "message_stop", `{"type":"message_stop"}`, vEnd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := anthropicFlavour{}.NewWatcher()
			if got := w.Observe(&sseEvent{Name: tc.ev, Data: []byte(tc.data)}, false); got.Verdict != tc.want {
				t.Fatalf("got %v want %v", got.Verdict, tc.want)
			}
		})
	}
}

func TestSSEReader(t *testing.T) {
	in := "event: a\ndata: {\"x\":1}\n\n: keepalive\n\nevent: b\r\ndata: l1\r\ndata: l2\r\n\r\n\nevent: c\ndata: tail"
	rd := newSSEReader(strings.NewReader(in))
	var got []sseEvent
	var err error
	for {
		var ev sseEvent
		if ev, err = rd.Next(); err != nil {
			break
		}
		got = append(got, ev)
	}
	// POOL-19: the event pending at EOF (no blank line) is dispatched.
	if err != io.EOF || len(got) != 4 || got[3].Name != "c" || string(got[3].Data) != "tail" || string(got[3].Raw) != "event: c\ndata: tail\n\n" {
		t.Fatalf("%v %+v", err, got)
	}
	if got[0].Name != "a" || string(got[0].Data) != `{"x":1}` || !got[1].Comment || got[2].Name != "b" || string(got[2].Data) != "l1\nl2" {
		t.Fatalf("%+v", got)
	}
	if string(got[2].Raw) != "event: b\r\ndata: l1\r\ndata: l2\r\n\r\n" {
		t.Fatalf("raw %q", got[2].Raw)
	}
}

// FuzzSSEReader: never panics; re-reading the concatenated Raw bytes of the
// events yields the same events (forwarding Raw is lossless).
func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{"event: a\ndata: x\n\n", "data: a\r\rdata: b\r\n\r\n", "data: [DONE]", "event: e\r\ndata: x\r\n", ": c\n\n", "data: 1\r\n\r\n", "\n\n\nevent: e", "data:\n\n", "event:x\ndata:y\nid: 3\nretry: 5\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		read := func(b []byte) ([]sseEvent, []byte) {
			rd := newSSEReader(bytes.NewReader(b))
			var evs []sseEvent
			var raw []byte
			for i := 0; i < 1<<16; i++ {
				ev, err := rd.Next()
				if err != nil {
					break
				}
				evs = append(evs, ev)
				raw = append(raw, ev.Raw...)
			}
			return evs, raw
		}
		evs, raw := read(in)
		again, raw2 := read(raw)
		if len(evs) != len(again) || !bytes.Equal(raw, raw2) {
			t.Fatalf("not stable: %d vs %d events", len(evs), len(again))
		}
		for i := range evs {
			if evs[i].Name != again[i].Name || !bytes.Equal(evs[i].Data, again[i].Data) || evs[i].Comment != again[i].Comment {
				t.Fatalf("event %d differs", i)
			}
		}
	})
}

// FuzzSplice: the splice either refuses or yields valid JSON whose "model"
// is the new value and whose other keys are unchanged.
func FuzzSplice(f *testing.F) {
	for _, s := range []string{`{"model":"a","x":1}`, `{ "x" : [1,{"model":2}], "model" :"b" }`, `{}`, `[]`, `{"model":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, ok := spliceTopLevel(in, "model", []byte(`"NEW"`))
		if !ok {
			return
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal(in, &before) != nil {
			return // duplicate keys or trailing junk: only validity of out matters less
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("invalid JSON after splice: %q", out)
		}
		if _, had := before["model"]; !had {
			return
		}
		for k := range before {
			if k != "model" && !bytes.Equal(before[k], after[k]) && bytes.Count(in, []byte(`"model"`)) == 1 {
				t.Fatalf("key %q changed", k)
			}
		}
	})
}

func TestOverrideBinding(t *testing.T) {
	t.Run("POOL-6/model-the-bound-member-cannot-serve-gets-own-binding", func(t *testing.T) {
		p := &config.PoolConfig{ID: "p", Strategy: config.StrategySticky, Members: []string{"a", "b", "c"}, SessionTTL: time.Hour}
		as := newAssigner()
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		hot := func(string) bool { return true }
		all := p.Members
		// Other sessions load a and b so that least-bound would pick c.
		for i, m := range []string{"a", "b"} {
			k := bindKey{"p", fmt.Sprint("other", i), "m1"}
			got, f := as.acquire(p, k, []string{m}, hot, now)
			as.release(p, k, f, got, now)
		}
		k1 := bindKey{"p", "s", "m1"}
		m, f := as.acquire(p, k1, []string{"a"}, hot, now) // only a serves m1
		as.release(p, k1, f, m, now)
		// m2: a cannot serve it → its own (override) binding, balanced: c.
		k2 := bindKey{"p", "s", "m2"}
		m2, f := as.acquire(p, k2, []string{"b", "c"}, hot, now)
		as.release(p, k2, f, m2, now)
		if m != "a" || m2 != "c" {
			t.Fatalf("m1 → %s, m2 → %s", m, m2)
		}
		// m3 served by everyone: the session stays on its member rather than
		// being balanced elsewhere.
		k3 := bindKey{"p", "s", "m3"}
		m3, f := as.acquire(p, k3, all, hot, now)
		as.release(p, k3, f, m3, now)
		if m3 != "a" && m3 != "c" {
			t.Fatalf("m3 → %s, want the session's member", m3)
		}
		if got, _ := as.acquire(p, k1, all, hot, now); got != "a" {
			t.Fatalf("m1 binding lost: %s", got)
		}
	})
	t.Run("POOL-6/removed-member-reassigned", func(t *testing.T) {
		p := &config.PoolConfig{ID: "p", Strategy: config.StrategySticky, Members: []string{"a", "b"}, SessionTTL: time.Hour}
		as := newAssigner()
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		k := bindKey{"p", "s", "m"}
		as.release(p, k, false, "a", now)
		as.retain(&config.Config{Pools: []*config.PoolConfig{{ID: "p", Members: []string{"b"}}}})
		if got, _ := as.acquire(p, k, []string{"b"}, func(string) bool { return true }, now); got != "b" {
			t.Fatal(got)
		}
	})
}
