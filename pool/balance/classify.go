package balance

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// maxRetryAfter caps a server-given wait so a bogus header cannot park a
// member for days.
const maxRetryAfter = time.Hour

// MinRetryAfter is the wait a server-given "retry now" stands for
// (Retry-After: 0, a past HTTP-date, retry-after-ms: 0): a
// short floor that keeps a burst of calls from hammering the member in
// the same instant, not the rate_limit class's default cooldown.
const MinRetryAfter = time.Second

// ClassifyStatus maps an upstream HTTP error answer to a failure class
// (SPEC POOL-10, POOL-10b; by status and error wording, the way LLM
// gateways classify provider errors: docs/POOL.md):
// first the wording table (errorRules: the caller's parameter errors, quota
// and billing exhaustion in any of 400/402/403/429), then the status: 402
// quota; 401/403 auth; 429 rate_limit; 408 timeout; 5xx and 529 server;
// other 4xx bad_request, except a "model not found" answer, which is that
// member's misconfiguration (model_not_found).
func ClassifyStatus(status int, errType, msg string) string {
	lower := strings.ToLower(errType + " " + msg)
	if class := matchRule(status, lower); class != "" {
		return class
	}
	switch {
	case status == 402:
		return config.ClassQuota
	case status == 401 || status == 403:
		return config.ClassAuth
	case status == 429:
		return config.ClassRateLimit
	case status == 408:
		return config.ClassTimeout
	case status >= 500:
		return config.ClassServer
	case status >= 400:
		if modelNotFound(status, errType, lower) {
			return config.ClassModelNotFound
		}
		return config.ClassBadRequest
	}
	return config.ClassServer
}

// modelNotFound recognises "the model id does not exist here" answers.
func modelNotFound(status int, errType, lower string) bool {
	if !strings.Contains(lower, "model") {
		return false
	}
	if errType == "model_not_found" || strings.Contains(lower, "model_not_found") {
		return true
	}
	if status == 404 {
		return true
	}
	for _, s := range []string{"not found", "does not exist", "not exist", "unknown model", "invalid model", "no such model", "not supported"} {
		if strings.Contains(lower, s) {
			return true
		}
	}
	return false
}

// RetryAfter reads the server's requested wait:
// retry-after-ms (milliseconds) when present, else Retry-After (seconds or
// HTTP-date, RFC 9110 §10.2.3), else the latest
// anthropic-ratelimit-*-reset (RFC 3339), the order the Anthropic and
// OpenAI SDKs read them in. 0 when none is present and valid: the class's
// default applies. A present value of 0, or a date in the past, means "may
// retry now" and is MinRetryAfter; any value is capped at one hour.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	d, ok := time.Duration(0), false
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms >= 0 {
			d, ok = clampWait(ms*float64(time.Millisecond)), true
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); !ok && v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			d, ok = clampWait(s*float64(time.Second)), true
		} else if t, err := http.ParseTime(v); err == nil {
			d, ok = t.Sub(now), true
		}
	}
	if !ok {
		for k, vs := range h {
			lk := strings.ToLower(k)
			if !strings.HasPrefix(lk, "anthropic-ratelimit-") || !strings.HasSuffix(lk, "-reset") || len(vs) == 0 {
				continue
			}
			if t, err := time.Parse(time.RFC3339, strings.TrimSpace(vs[0])); err == nil {
				if w := t.Sub(now); !ok || w > d {
					d = w
				}
				ok = true
			}
		}
	}
	if !ok {
		return 0
	}
	return min(max(d, MinRetryAfter), maxRetryAfter)
}

// clampWait converts a wait in nanoseconds (a float from a header) to a
// Duration, capped at maxRetryAfter before the conversion so a huge value
// ("99999999999", "1e20", "Inf") cannot overflow into a negative Duration.
func clampWait(ns float64) time.Duration {
	if ns >= float64(maxRetryAfter) {
		return maxRetryAfter
	}
	return time.Duration(ns)
}

// Transience ranks a failure's HTTP status for the aggregated error: 429 >
// 529/503 > other 5xx > everything else.
func Transience(status int) int {
	switch {
	case status == 429:
		return 4
	case status == 529 || status == 503:
		return 3
	case status >= 500:
		return 2
	}
	return 1
}

// ClassStatus is the HTTP status reported for a failure that had none
// (connect error, timeout, empty answer).
func ClassStatus(class string) int {
	switch class {
	case config.ClassTimeout:
		return 504
	case config.ClassRateLimit:
		return 429
	}
	return 502
}
