package cli

import (
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// Print writes the resolved configuration as aligned "key: value" lines,
// credentials redacted (SPEC LIS-4).
func (s *Settings) Print(w io.Writer) error {
	cands, warnings, err := route.BuildCandidates(s.Spec)
	if err != nil {
		return err
	}
	kv := [][2]string{
		{"listen", net.JoinHostPort(strings.Trim(s.ListenHost, "[]"), strconv.Itoa(s.ListenPort))},
		{"port-fallback", fmt.Sprint(s.PortFallback)},
		{"loopback-direct", fmt.Sprint(s.LoopbackDirect)},
		{"timeout-ms", fmt.Sprint(s.ConnectTimeout.Milliseconds())},
		{"response-timeout-ms", fmt.Sprint(s.ResponseTimeout.Milliseconds())},
		{"fast-fail-ms", fmt.Sprint(s.FastFail.Milliseconds())},
		{"race-delay-ms", fmt.Sprint(s.RaceDelay.Milliseconds())},
		{"tunnel-idle-timeout-ms", fmt.Sprint(s.TunnelIdle.Milliseconds())},
		{"tunnel-half-close-timeout-ms", fmt.Sprint(s.TunnelHalfClose.Milliseconds())},
		{"head-timeout-ms", fmt.Sprint(s.HeadTimeout.Milliseconds())},
		{"verify-tls", fmt.Sprint(s.VerifyTLS)},
		{"pref-ttl-ms", fmt.Sprint(s.PrefTTL.Milliseconds())},
		{"cooldown-ms", fmt.Sprint(s.Cooldown.Milliseconds())},
		{"prefer-direct", orNone(strings.Join(s.PreferDirect, ","))},
		{"prefer-proxy", orNone(strings.Join(s.PreferProxy, ","))},
		{"no-proxy (prefer-direct)", orNone(noProxyRules(s.Env))},
		{"health-url", orNone(route.RedactURL(redactQuery(s.HealthURL)))},
		{"health-interval-ms", fmt.Sprint(s.HealthInterval.Milliseconds())},
		{"health-recover-count", fmt.Sprint(s.HealthRecover)},
		{"retry-non-idempotent-after-send", fmt.Sprint(s.RetryAfterSend)},
		{"retry-non-idempotent-with-idempotency-key", fmt.Sprint(s.RetryWithKey)},
		{"log-level", strings.ToLower(s.LogLevel.String())},
		{"log-format", s.LogFormat},
	}
	if s.Mode != modeServe {
		kv = append(kv, [2]string{"log-file", s.LogFile}, [2]string{"kill-after-ms", fmt.Sprint(s.KillAfter.Milliseconds())})
		kv = append(kv, [2]string{"command", orNone(strings.Join(s.Command, " "))}, [2]string{"pool", orNone(s.PoolName)})
	}
	width := 0
	for _, p := range kv {
		width = max(width, len(p[0]))
	}
	for _, p := range kv {
		fmt.Fprintf(w, "%-*s  %s\n", width+1, p[0]+":", p[1])
	}
	fmt.Fprintln(w, "candidates (default order):")
	for i, c := range cands {
		extra := ""
		if c.CAFile != "" {
			extra = ", ca " + c.CAFile
		}
		fmt.Fprintf(w, "  %d. %-40s %-8s (%s%s)\n", i+1, c.String(), c.KindName(), c.Source, extra)
	}
	printPool(s, w)
	if len(warnings) > 0 {
		sort.Strings(warnings)
		fmt.Fprintln(w, "warnings:")
		for _, wn := range warnings {
			fmt.Fprintf(w, "  - %s\n", wn)
		}
	}
	return nil
}

// redactQuery hides a URL's query string, which may carry tokens.
func redactQuery(raw string) string {
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		return raw[:i] + "?***"
	}
	return raw
}

func orNone(s string) string {
	if s == "" {
		return "(off)"
	}
	return s
}
