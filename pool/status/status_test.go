package status

import (
	"testing"
	"time"
)

func TestCooldownText(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 14, 2, 5, 0, time.UTC)
	since := t0
	for _, tc := range []struct {
		name  string
		since *time.Time
		until time.Time
		now   time.Time
		want  string
	}{
		{"POOL-13/since-for-retry-in", &since, t0.Add(60 * time.Second), t0.Add(40 * time.Second), "since 14:02:05 (for 40 s), retry in 20 s"},
		{"POOL-13/retry-in-rounds-up", &since, t0.Add(60 * time.Second), t0.Add(59*time.Second + 100*time.Millisecond), "since 14:02:05 (for 59 s), retry in 1 s"},
		{"POOL-13/start-unknown", nil, t0.Add(60 * time.Second), t0.Add(40 * time.Second), "retry in 20 s (at 14:03:05)"},
		{"POOL-13/over", &since, t0.Add(60 * time.Second), t0.Add(60 * time.Second), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CooldownText(tc.since, tc.until, tc.now, time.UTC); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
