package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	vcs := func(modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified},
		}}
	}
	cases := []struct {
		name, v, c   string
		bi           *debug.BuildInfo
		wantV, wantC string
	}{
		{"PLAT-2/ldflags-stamp-wins", "1.2.3", rev, vcs("true"), "1.2.3", "0123456789ab"},
		{"PLAT-2/go-install-module-version", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "1.4.0", "unknown"},
		{"PLAT-2/go-build-in-checkout", "", "", vcs("false"), "(devel)", "0123456789ab"},
		{"PLAT-2/go-build-dirty-checkout", "", "", vcs("true"), "(devel)", "0123456789ab-dirty"},
		{"PLAT-2/no-build-info", "", "", nil, "(devel)", "unknown"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, cm := resolve(c.v, c.c, c.bi)
			if v != c.wantV || cm != c.wantC {
				t.Fatalf("resolve = %q, %q; want %q, %q", v, cm, c.wantV, c.wantC)
			}
		})
	}
	t.Run("PLAT-2/string-names-the-commit", func(t *testing.T) {
		if s := String(); !strings.Contains(s, " (commit ") {
			t.Fatalf("String() = %q", s)
		}
	})
}
