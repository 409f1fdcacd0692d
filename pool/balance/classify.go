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

// RetryAfter reads the server's requested wait (SPEC POOL-10): retry-after-ms
// (milliseconds), Retry-After (seconds or HTTP-date, RFC 9110 §10.2.3), else
// the latest anthropic-ratelimit-*-reset (RFC 3339). 0 when absent or in the
// past; capped at one hour.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	d := time.Duration(0)
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms > 0 {
			d = clampWait(ms * float64(time.Millisecond))
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); d == 0 && v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			if s > 0 {
				d = clampWait(s * float64(time.Second))
			}
		} else if t, err := http.ParseTime(v); err == nil {
			d = t.Sub(now)
		}
	}
	if d == 0 {
		for k, vs := range h {
			lk := strings.ToLower(k)
			if !strings.HasPrefix(lk, "anthropic-ratelimit-") || !strings.HasSuffix(lk, "-reset") || len(vs) == 0 {
				continue
			}
			if t, err := time.Parse(time.RFC3339, strings.TrimSpace(vs[0])); err == nil {
				d = max(d, t.Sub(now))
			}
		}
	}
	if d < 0 {
		return 0
	}
	return min(d, maxRetryAfter)
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

// Transience ranks a failure's HTTP status for the aggregated error
// (SPEC POOL-11): 429 > 529/503 > other 5xx > everything else.
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
