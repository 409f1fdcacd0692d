package cli

import (
	"regexp"
	"strings"
	"testing"
)

// TestNumbersReadAlikeFromEverySource: a whole-number flag or its
// variable reads as the config file, `dual-proxy settings set` and the API
// read it (settings.ParseText): decimal ("0100" is 100, never octal 64),
// spaces around ignored; an empty variable is not set, the default
// (docs/flags.md, SPEC OPS-7).
func TestNumbersReadAlikeFromEverySource(t *testing.T) {
	cooldown := func(t *testing.T, env []string, args ...string) (string, string, int) {
		t.Helper()
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		out, errOut, status := runCmd(t, DualProxy, env, append(args, "--print-config")...)
		m := regexp.MustCompile(`(?m)^cooldown-ms:\s+(\S+)$`).FindStringSubmatch(out)
		if m == nil {
			return "", errOut, status
		}
		return m[1], errOut, status
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"OPS-7/empty-variable-is-not-set", []string{"COOLDOWN_MS="}, nil, "30000"},
		{"OPS-7/blank-variable-is-not-set", []string{"COOLDOWN_MS=  "}, nil, "30000"},
		{"OPS-7/variable-with-spaces-around", []string{"COOLDOWN_MS= 1500 "}, nil, "1500"},
		{"OPS-7/leading-zero-variable-is-decimal", []string{"COOLDOWN_MS=0100"}, nil, "100"},
		{"OPS-7/leading-zero-flag-is-decimal", nil, []string{"--cooldown-ms", "0100"}, "100"},
		{"OPS-7/leading-zero-flag-equals-is-decimal", nil, []string{"--cooldown-ms=0100"}, "100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errOut, status := cooldown(t, tc.env, tc.args...)
			if status != 0 || got != tc.want {
				t.Fatalf("status %d cooldown-ms %q, want %s: %s", status, got, tc.want, errOut)
			}
		})
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"OPS-7/hex-flag-refused", nil, []string{"--cooldown-ms", "0x10"}, `dual-proxy: --cooldown-ms: want a whole number, got "0x10"`},
		{"OPS-7/underscore-variable-refused", []string{"COOLDOWN_MS=1_000"}, nil, `dual-proxy: environment variable COOLDOWN_MS (--cooldown-ms): want a whole number, got "1_000"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, status := cooldown(t, tc.env, tc.args...)
			if status != 2 || strings.TrimSpace(errOut) != tc.want {
				t.Fatalf("status %d: %q, want %q", status, errOut, tc.want)
			}
		})
	}
}
