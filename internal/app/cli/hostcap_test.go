package cli

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// TestHostListFlagsAreCapped: --prefer-direct and --prefer-proxy, or
// their variables, with more than settings.MaxHostPatterns patterns exit
// 2 naming the flag (or the variable) and the limit (SPEC OPS-7, ORD-3).
func TestHostListFlagsAreCapped(t *testing.T) {
	list := make([]string, settings.MaxHostPatterns+1)
	for i := range list {
		list[i] = fmt.Sprintf("h%d.example", i)
	}
	text, limit := strings.Join(list, ","), fmt.Sprint(settings.MaxHostPatterns)
	t.Run("OPS-7/prefer-direct-flag-over-the-limit-exit-2", func(t *testing.T) {
		_, errOut, status := runCmd(t, DualProxy, nil, "--prefer-direct", text, "--print-config")
		if status != 2 || !strings.Contains(errOut, "--prefer-direct") || !strings.Contains(errOut, limit) {
			t.Fatalf("status %d: %.300s", status, errOut)
		}
	})
	t.Run("OPS-7/NO_PROXY-with-prefer-direct-over-the-limit-exit-2", func(t *testing.T) {
		skipLongVariable(t)
		// NO_PROXY and no_proxy are matched as prefer-direct patterns: their
		// union counts toward the same limit.
		half := len(list) / 2
		env := []string{"NO_PROXY=" + strings.Join(list[:half], ","), "no_proxy=" + strings.Join(list[half:], ",")}
		_, errOut, status := runCmd(t, DualProxy, env, "--prefer-direct", "one.example", "--print-config")
		if status != 2 || !strings.Contains(errOut, "NO_PROXY/no_proxy") || !strings.Contains(errOut, limit) {
			t.Fatalf("status %d: %.300s", status, errOut)
		}
	})
	t.Run("OPS-7/PREFER_PROXY-over-the-limit-exit-2", func(t *testing.T) {
		skipLongVariable(t)
		t.Setenv("PREFER_PROXY", text)
		_, errOut, status := runCmd(t, DualProxy, []string{"PREFER_PROXY=" + text}, "--print-config")
		if status != 2 || !strings.Contains(errOut, "environment variable PREFER_PROXY (--prefer-proxy)") || !strings.Contains(errOut, limit) {
			t.Fatalf("status %d: %.300s", status, errOut)
		}
	})
}

// skipLongVariable skips a case that needs a variable longer than Windows
// holds: a value is at most 32,767 characters there, fewer than
// settings.MaxHostPatterns+1 patterns take (and NO_PROXY and no_proxy are
// one variable), so the cap cannot be passed by variable on Windows.
func skipLongVariable(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("Windows holds at most 32,767 characters in a variable, fewer than the cap's patterns take")
	}
}
