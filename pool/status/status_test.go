package status

import (
	"net/http"
	"net/http/httptest"
	"strings"
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

// TestReloadBoxEscapesHostileNames: the failed-reload box the page is sent with
// (SPEC POOL-16, POOL-22) escapes a file name and config errors that hold
// markup, quotes and invalid UTF-8, with the editor's section or without.
func TestReloadBoxEscapesHostileNames(t *testing.T) {
	t.Run("POOL-16/reload-box-escapes-hostile-names", func(t *testing.T) {
		at := time.Date(2026, 12, 2, 0, 1, 2, 0, time.UTC)
		file := "/tmp/odd<script>alert(1)</script>\"&'\xff/config.yaml"
		conf := ConfigState{File: file, LoadedAt: at, ReloadFailedAt: &at, ReloadErrors: []string{
			file + `:2:3: channels.<img src=x onerror=alert(2)>.api_key: expected a string`,
			file + `:5:18: pools.p1.members[0]: unknown channel "</code></li></ul></div><script>alert(3)</script>"`,
		}}
		for _, editing := range []bool{false, true} {
			rec := httptest.NewRecorder()
			ServePage(rec, httptest.NewRequest(http.MethodGet, "/pool/", nil), editing, conf)
			body := rec.Body.String()
			i := strings.Index(body, `<div id="reload"`)
			if i < 0 || !strings.Contains(body, `data-failed="true"`) {
				t.Fatalf("editing %v: no failed-reload box", editing)
			}
			box := body[i : i+strings.Index(body[i:], "</ul></div>")]
			for _, bad := range []string{"<script", "<img", "</code></li></ul></div><", `"&'`} {
				if strings.Contains(box, bad) {
					t.Fatalf("editing %v: %q unescaped in the box:\n%s", editing, bad, box)
				}
			}
			if strings.Count(box, "<li><code>") != 2 || !strings.Contains(box, "&lt;script&gt;alert(3)&lt;/script&gt;") {
				t.Fatalf("editing %v: errors not shown escaped:\n%s", editing, box)
			}
		}
	})
}
