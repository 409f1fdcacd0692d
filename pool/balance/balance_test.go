package balance

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
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
	t.Run("POOL-13/cooldown-since-kept-across-extensions", func(t *testing.T) {
		s := NewMemory()
		ctx := context.Background()
		s.Fail(ctx, "a", config.ClassServer, base, 0, t0)
		s.Fail(ctx, "a", config.ClassAuth, 600*time.Second, 0, t0.Add(time.Second)) // extends, same cooldown
		cd := s.Cooldowns(ctx, []string{"a"}, t0.Add(2*time.Second))["a"]
		if !cd.Since.Equal(t0) || !cd.Until.Equal(t0.Add(601*time.Second)) {
			t.Fatalf("since %v until %v, want since t0", cd.Since, cd.Until)
		}
		s.Succeed(ctx, "a")
		s.Fail(ctx, "a", config.ClassServer, base, 0, t0.Add(10*time.Second))
		if cd := s.Cooldowns(ctx, []string{"a"}, t0.Add(11*time.Second))["a"]; !cd.Since.Equal(t0.Add(10 * time.Second)) {
			t.Fatalf("a new cooldown keeps the old start: %v", cd.Since)
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
			if got := ClassifyStatus(tc.status, tc.typ, tc.msg); got != tc.want {
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
		{"POOL-26/retry-after-0-is-now", map[string]string{"Retry-After": "0"}, MinRetryAfter},
		{"POOL-26/retry-after-past-date-is-now", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, MinRetryAfter},
		{"POOL-26/retry-after-ms-0-is-now-and-wins", map[string]string{"retry-after-ms": "0", "Retry-After": "7"}, MinRetryAfter},
		{"POOL-26/retry-after-fraction-floored", map[string]string{"Retry-After": "0.2"}, MinRetryAfter},
		{"POOL-26/anthropic-reset-past-is-now", map[string]string{"anthropic-ratelimit-requests-reset": now.Add(-5 * time.Second).Format(time.RFC3339)}, MinRetryAfter},
		{"POOL-26/negative-ignored", map[string]string{"Retry-After": "-3"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.h {
				h.Set(k, v)
			}
			if got := RetryAfter(h, now); got != tc.want {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
}

func TestSessionIdentity(t *testing.T) {
	ci := &neutral.CallInfo{MetadataSession: "meta", PromptCacheKey: "pck", ContentHash: "content:x"}
	for _, tc := range []struct {
		name string
		h    map[string]string
		ci   *neutral.CallInfo
		want string
	}{
		{"POOL-5/x-session-id-first", map[string]string{"X-Session-Id": "xs", "X-Claude-Code-Session-Id": "cc"}, ci, "xs"},
		{"POOL-5/claude-header", map[string]string{"X-Claude-Code-Session-Id": "cc", "session-id": "cx"}, ci, "cc"},
		{"POOL-5/claude-metadata", map[string]string{"session-id": "cx"}, ci, "meta"},
		{"POOL-5/codex-header", map[string]string{"session_id": "cx"}, &neutral.CallInfo{PromptCacheKey: "pck"}, "cx"},
		{"POOL-5/codex-prompt-cache-key", map[string]string{"x-session-affinity": "oc"}, &neutral.CallInfo{PromptCacheKey: "pck"}, "pck"},
		{"POOL-5/opencode", map[string]string{"x-opencode-session": "oc"}, &neutral.CallInfo{ContentHash: "content:x"}, "oc"},
		{"POOL-5/amp", map[string]string{"X-Amp-Thread-Id": "amp"}, &neutral.CallInfo{ContentHash: "content:x"}, "amp"},
		{"POOL-5/content-hash-last", nil, &neutral.CallInfo{ContentHash: "content:x"}, "content:x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.h {
				h.Set(k, v)
			}
			if got, _ := SessionIdentity(h, tc.ci); got != tc.want {
				t.Fatalf("got %q want %q", got, tc.want)
			}
		})
	}
	t.Run("POOL-5/content-hash-only-when-no-header-names-the-session", func(t *testing.T) {
		// Hashing a 16 KiB prompt cost more than the rest of the request's
		// parse: it is done only when it decides the session.
		for _, c := range []struct {
			fl   api.Flavour
			body string
		}{
			{api.For(apikind.Anthropic), `{"model":"m","system":"s","messages":[{"role":"user","content":"hi"}]}`},
			{api.For(apikind.Chat), `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`},
		} {
			named, err := c.fl.ParseRequest(neutral.Endpoint{Kind: neutral.EpGenerate}, []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if id, _ := SessionIdentity(http.Header{"X-Session-Id": {"xs"}}, named); id != "xs" || named.ContentHash != "" {
				t.Fatalf("%T: id %q, content hash %q computed though the header named the session", c.fl, id, named.ContentHash)
			}
			bare, _ := c.fl.ParseRequest(neutral.Endpoint{Kind: neutral.EpGenerate}, []byte(c.body))
			if id, src := SessionIdentity(http.Header{}, bare); !strings.HasPrefix(id, "content:") || src != "content-hash" || id != named.SessionContentHash() {
				t.Fatalf("%T: id %q from %q, want the content hash %q", c.fl, id, src, named.SessionContentHash())
			}
		}
	})
	t.Run("POOL-13b/session-hash-short-and-opaque", func(t *testing.T) {
		h := SessionHash("e058fb67-a914-4ca1-b1db-49a67e38509e")
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
		if got := strings.Join(AttemptOrder([]string{"a", "b", "c", "d"}, "d", until), ","); got != "d,a,c,b" {
			t.Fatal(got)
		}
	})
	t.Run("POOL-11/all-cooling-earliest-recovery-first", func(t *testing.T) {
		if got := strings.Join(AttemptOrder([]string{"b", "c"}, "b", until), ","); got != "c,b" {
			t.Fatal(got)
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
			k := BindKey{"p", fmt.Sprint("other", i), "m1"}
			got, f := as.acquire(p, k, []string{m}, hot, now)
			as.release(p, k, f, got, now)
		}
		k1 := BindKey{"p", "s", "m1"}
		m, f := as.acquire(p, k1, []string{"a"}, hot, now) // only a serves m1
		as.release(p, k1, f, m, now)
		// m2: a cannot serve it → its own (override) binding, balanced: c.
		k2 := BindKey{"p", "s", "m2"}
		m2, f := as.acquire(p, k2, []string{"b", "c"}, hot, now)
		as.release(p, k2, f, m2, now)
		if m != "a" || m2 != "c" {
			t.Fatalf("m1 → %s, m2 → %s", m, m2)
		}
		// m3 served by everyone: the session stays on its member rather than
		// being balanced elsewhere.
		k3 := BindKey{"p", "s", "m3"}
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
		k := BindKey{"p", "s", "m"}
		as.release(p, k, false, "a", now)
		as.retain(&config.Config{Pools: []*config.PoolConfig{{ID: "p", Members: []string{"b"}}}})
		if got, _ := as.acquire(p, k, []string{"b"}, func(string) bool { return true }, now); got != "b" {
			t.Fatal(got)
		}
	})
}
