package statusview

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStatusFormatting(t *testing.T) {
	for _, tc := range []struct {
		ms   int64
		want string
	}{{0, "0 ms"}, {999, "999 ms"}, {1000, "1.0 s"}, {29900, "29.9 s"}, {60000, "1 m 0 s"}, {250000, "4 m 10 s"}} {
		if got := msText(tc.ms); got != tc.want {
			t.Errorf("OPS-2/msText(%d) = %q, want %q", tc.ms, got, tc.want)
		}
	}
	if got := clip("a\tb\nc", 10); got != "a b c" {
		t.Errorf("OPS-2/clip removes tabs and newlines: %q", got)
	}
	if got := clip("héllo wörld", 2); got != "h…" {
		t.Errorf("OPS-2/clip on a rune boundary: %q", got)
	}
}

func TestStatusTableHealthFailing(t *testing.T) {
	t.Run("HC-4/health-failing-candidate-not-shown-hot", func(t *testing.T) {
		st := &statusdoc.Status{
			Candidates: []statusdoc.CandidateStatus{
				{Candidate: "http://127.0.0.1:7897", Source: "upstream", State: statusdoc.StateHot},
				{Candidate: "direct", Source: "direct", State: statusdoc.StateHot},
			},
			Health: statusdoc.HealthStatus{Enabled: true, Origin: "https://api.example",
				Results: []statusdoc.HealthResultStatus{{Candidate: "http://127.0.0.1:7897", Reason: "refused"}, {Candidate: "direct", Alive: true}}},
		}
		var b strings.Builder
		if err := Table(&b, st, 0); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !regexp.MustCompile(`1\s+http://127\.0\.0\.1:7897\s+-\s+upstream\s+failing \(health\)`).MatchString(out) ||
			!regexp.MustCompile(`2\s+direct\s+-\s+direct\s+hot`).MatchString(out) {
			t.Fatalf("table:\n%s", out)
		}
	})
}

func TestStatusTableUntried(t *testing.T) {
	t.Run("OPS-2/untried-candidate-not-shown-hot", func(t *testing.T) {
		// Nothing listens on the default gateway, no traffic yet: the
		// verdict says "1 untried", so the table must not say hot.
		st := &statusdoc.Status{
			Candidates: []statusdoc.CandidateStatus{
				{Candidate: "http://127.0.0.1:7897", Source: "upstream", State: statusdoc.StateHot},
				{Candidate: "direct", Source: "direct", State: statusdoc.StateHot, Successes: 1},
			},
		}
		var b strings.Builder
		if err := Table(&b, st, 0); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !regexp.MustCompile(`1\s+http://127\.0\.0\.1:7897\s+-\s+upstream\s+untried`).MatchString(out) ||
			!regexp.MustCompile(`2\s+direct\s+-\s+direct\s+hot`).MatchString(out) {
			t.Fatalf("table:\n%s", out)
		}
	})
}

func TestVerdictHealthOnlyFailure(t *testing.T) {
	t.Run("OPS-2/health-only-failure-names-the-last-run-not-a-since", func(t *testing.T) {
		lastRun := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
		st := &statusdoc.Status{
			Candidates: []statusdoc.CandidateStatus{
				{Candidate: "http://127.0.0.1:7897", State: statusdoc.StateHot},
				{Candidate: "direct", State: statusdoc.StateHot},
			},
			Health: statusdoc.HealthStatus{Enabled: true, LastRun: lastRun,
				Results: []statusdoc.HealthResultStatus{{Candidate: "http://127.0.0.1:7897", Reason: "refused"}, {Candidate: "direct", Alive: true}}},
		}
		// The last run is all that is known: "failing since <last run>"
		// would move forward with every run of a candidate that has failed
		// for hours.
		got := Verdict(st)
		if want := "http://127.0.0.1:7897 failing: health check failed (last run 03:04:05)"; !strings.Contains(got, want) || strings.Contains(got, "since") {
			t.Fatalf("verdict %q, want it to contain %q and no 'since'", got, want)
		}
	})
}

func TestVerdictUntriedNotHealthy(t *testing.T) {
	t.Run("OPS-2/no-evidence-is-untried-not-healthy", func(t *testing.T) {
		// Health checks off, no traffic: nothing is known about either path
		// (the gateway may have nothing listening).
		st := &statusdoc.Status{Candidates: []statusdoc.CandidateStatus{
			{Candidate: "http://127.0.0.1:7897", State: statusdoc.StateHot},
			{Candidate: "direct", State: statusdoc.StateHot},
		}}
		if got, want := Verdict(st), "no requests yet · 0 of 2 paths proven, 2 untried"; got != want {
			t.Fatalf("verdict %q, want %q", got, want)
		}
	})
	t.Run("OPS-2/success-or-passing-health-check-proves", func(t *testing.T) {
		st := &statusdoc.Status{
			Candidates: []statusdoc.CandidateStatus{
				{Candidate: "http://127.0.0.1:7897", State: statusdoc.StateHot, Successes: 3},
				{Candidate: "socks5://127.0.0.1:1080", State: statusdoc.StateHot},
				{Candidate: "direct", State: statusdoc.StateHot},
			},
			Health: statusdoc.HealthStatus{Enabled: true, Results: []statusdoc.HealthResultStatus{{Candidate: "direct", Alive: true}}},
		}
		if got, want := Verdict(st), "2 of 3 paths proven, 1 untried"; !strings.Contains(got, want) {
			t.Fatalf("verdict %q, want it to contain %q", got, want)
		}
	})
}

func TestStatusTargetDown(t *testing.T) {
	t.Run("HC-1/OPS-2/target-failing-on-every-path-blames-no-path", func(t *testing.T) {
		// Offline: the health URL failed through the gateway (its own
		// 502) and direct, while the gateway served requests.
		st := &statusdoc.Status{
			Candidates: []statusdoc.CandidateStatus{
				{Candidate: "http://127.0.0.1:3128", Source: "gateway", State: statusdoc.StateHot, Successes: 2},
				{Candidate: "direct", Source: "direct", State: statusdoc.StateUntried},
			},
			Health: statusdoc.HealthStatus{Enabled: true, Origin: "https://api.deepseek.com", TargetDown: true,
				Results: []statusdoc.HealthResultStatus{{Candidate: "http://127.0.0.1:3128", Reason: "gateway answered 502"}, {Candidate: "direct", Reason: "dial: no such host"}}},
		}
		v := Verdict(st)
		if !strings.Contains(v, "1 of 2 paths proven, 1 untried") || strings.Contains(v, "failing") ||
			!strings.Contains(v, "health check target https://api.deepseek.com fails on every path: the target is down or unreachable from here, not the paths") {
			t.Fatalf("verdict %q", v)
		}
		var b strings.Builder
		if err := Table(&b, st, 0); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !regexp.MustCompile(`1\s+http://127\.0\.0\.1:3128\s+-\s+gateway\s+hot`).MatchString(out) ||
			!regexp.MustCompile(`2\s+direct\s+-\s+direct\s+untried`).MatchString(out) ||
			!strings.Contains(out, "the target fails on every path (no path blamed)") || strings.Contains(out, "failing (health)") {
			t.Fatalf("table:\n%s", out)
		}
	})
}

// TestStatusTableSettings: the summary's settings come from the status
// document's settings, keyed by the long flag names, 0 shown as what it
// means on the command line (SPEC OPS-7).
func TestStatusTableSettings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings map[string]any
		want     string
	}{
		{"OPS-7/cooldown-in-seconds", map[string]any{"cooldown-ms": 30000.0}, "cooldown    30.0 s\n"},
		{"OPS-7/cooldown-0-is-off", map[string]any{"cooldown-ms": 0.0}, "cooldown    off\n"},
		{"OPS-2/no-settings-no-line", map[string]any{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := Table(&b, &statusdoc.Status{Settings: tc.settings}, 0); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); tc.want == "" && strings.Contains(got, "cooldown") || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("want %q in:\n%s", tc.want, got)
			}
		})
	}
}
