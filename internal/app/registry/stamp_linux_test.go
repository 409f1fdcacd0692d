package registry

import "testing"

func TestParseStatStart(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       int64
	}{
		{"plain", "1234 (dual-proxy) S 1 1234 1234 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1000 10", 98765},
		{"name-with-paren-and-spaces", "7 (a) b (c) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 555 0 0", 555},
	} {
		t.Run("PLAT-5/linux-stat-"+tc.name, func(t *testing.T) {
			if got, err := parseStatStart([]byte(tc.line)); got != tc.want || err != nil {
				t.Fatalf("got %d %v want %d", got, err, tc.want)
			}
		})
	}
	t.Run("PLAT-5/linux-stat-short-line-refused", func(t *testing.T) {
		if _, err := parseStatStart([]byte("1 (x) S 1")); err == nil {
			t.Fatal("short line accepted")
		}
	})
}
