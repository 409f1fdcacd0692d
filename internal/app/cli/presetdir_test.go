package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The preset directory is a pure function of the OS name: every row is
// tested on every OS (SPEC POOL-20, PLAT-1).
func TestPresetParentPerOS(t *testing.T) {
	cases := []struct {
		name, goos string
		env        []string
		want       string
	}{
		{"POOL-20/linux-xdg-state", "linux", []string{"HOME=/home/u", "XDG_STATE_HOME=/st", "XDG_RUNTIME_DIR=/run/user/1"}, "/st/dual-proxy/presets"},
		{"POOL-20/linux-home-without-runtime-dir", "linux", []string{"HOME=/root"}, "/root/.local/state/dual-proxy/presets"},
		{"POOL-20/linux-relative-xdg-ignored", "linux", []string{"HOME=/home/u", "XDG_STATE_HOME=st"}, "/home/u/.local/state/dual-proxy/presets"},
		{"POOL-20/linux-no-home-runtime-dir", "linux", []string{"XDG_RUNTIME_DIR=/run/user/1"}, "/run/user/1/dual-proxy-presets"},
		{"POOL-20/linux-nothing", "linux", nil, "/tmp/dual-proxy-presets"},
		{"POOL-20/darwin-caches", "darwin", []string{"HOME=/Users/u"}, "/Users/u/Library/Caches/dual-proxy/presets"},
		{"POOL-20/windows-local-appdata", "windows", []string{`LocalAppData=C:\Users\u\AppData\Local`}, `C:\Users\u\AppData\Local\dual-proxy\presets`},
		{"POOL-20/windows-userprofile", "windows", []string{`USERPROFILE=C:\Users\u`}, `C:\Users\u\AppData\Local\dual-proxy\presets`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := presetParentFor(c.goos, c.env, "/tmp"); got != c.want {
				t.Fatalf("presetParentFor(%q, %q) = %q, want %q", c.goos, c.env, got, c.want)
			}
		})
	}
}

func TestWritePreset(t *testing.T) {
	t.Run("POOL-20/private-directory-per-launch-removed-by-cleanup", func(t *testing.T) {
		state, home := t.TempDir(), t.TempDir()
		env := []string{"HOME=" + home, "XDG_STATE_HOME=" + state, "LOCALAPPDATA=" + state}
		p1, clean1, err := writePreset(env, "settings.json", []byte(`{"a":1}`))
		if err != nil {
			t.Fatal(err)
		}
		p2, clean2, err := writePreset(env, "settings.json", []byte(`{"a":2}`))
		if err != nil {
			t.Fatal(err)
		}
		defer clean2()
		if filepath.Dir(p1) == filepath.Dir(p2) {
			t.Fatalf("two launches share %s", filepath.Dir(p1))
		}
		if runtime.GOOS != "windows" && runtime.GOOS != "darwin" && !strings.HasPrefix(p1, filepath.Join(state, "dual-proxy", "presets")) {
			t.Fatalf("preset at %s, want under %s", p1, state)
		}
		if b, err := os.ReadFile(p1); err != nil || string(b) != `{"a":1}` {
			t.Fatalf("%q %v", b, err)
		}
		if runtime.GOOS != "windows" {
			for p, want := range map[string]os.FileMode{p1: 0o600, filepath.Dir(p1): 0o700, filepath.Dir(filepath.Dir(p1)): 0o700} {
				if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
					t.Fatalf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
				}
			}
		}
		clean1()
		if _, err := os.Stat(filepath.Dir(p1)); !os.IsNotExist(err) {
			t.Fatalf("cleanup left %s: %v", filepath.Dir(p1), err)
		}
		if _, err := os.Stat(p2); err != nil {
			t.Fatalf("cleanup of one launch removed another's preset: %v", err)
		}
	})
}
