package cli

import (
	"strings"
	"testing"
)

// The per-OS path choice is a pure function of the OS name: every OS's row is tested on every OS
// (SPEC PLAT-1, OPS-1).
func TestUserPathsPerOS(t *testing.T) {
	cases := []struct {
		name, goos string
		env        []string
		want       userPaths
	}{
		{"PLAT-1/linux-xdg", "linux", []string{"HOME=/home/u", "XDG_CONFIG_HOME=/cfg", "XDG_STATE_HOME=/st"},
			userPaths{"/cfg/dual-proxy/config.yaml", "/st/dual-proxy/launcher.log"}},
		{"PLAT-1/linux-home", "linux", []string{"HOME=/home/u"},
			userPaths{"/home/u/.config/dual-proxy/config.yaml", "/home/u/.local/state/dual-proxy/launcher.log"}},
		{"PLAT-1/linux-relative-xdg-ignored", "linux", []string{"HOME=/home/u", "XDG_CONFIG_HOME=cfg", "XDG_STATE_HOME=st"},
			userPaths{"/home/u/.config/dual-proxy/config.yaml", "/home/u/.local/state/dual-proxy/launcher.log"}},
		{"PLAT-1/linux-no-home", "linux", nil,
			userPaths{".config/dual-proxy/config.yaml", "/tmp/.local/state/dual-proxy/launcher.log"}},
		{"PLAT-1/linux-names-case-sensitive", "linux", []string{"HOME=/home/u", "xdg_state_home=/st"},
			userPaths{"/home/u/.config/dual-proxy/config.yaml", "/home/u/.local/state/dual-proxy/launcher.log"}},
		{"PLAT-1/darwin-library", "darwin", []string{"HOME=/Users/u", "XDG_CONFIG_HOME=/cfg"},
			userPaths{"/Users/u/Library/Application Support/dual-proxy/config.yaml", "/Users/u/Library/Logs/dual-proxy/launcher.log"}},
		{"PLAT-1/windows-appdata", "windows", []string{`AppData=C:\Users\u\AppData\Roaming`, `LOCALAPPDATA=C:\Users\u\AppData\Local\`},
			userPaths{`C:\Users\u\AppData\Roaming\dual-proxy\config.yaml`, `C:\Users\u\AppData\Local\dual-proxy\logs\launcher.log`}},
		{"PLAT-1/windows-userprofile-fallback", "windows", []string{`UserProfile=C:\Users\u`},
			userPaths{`C:\Users\u\AppData\Roaming\dual-proxy\config.yaml`, `C:\Users\u\AppData\Local\dual-proxy\logs\launcher.log`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := userPathsFor(c.goos, c.env, "/tmp"); got != c.want {
				t.Fatalf("userPathsFor(%q, %q) = %+v, want %+v", c.goos, c.env, got, c.want)
			}
		})
	}
	t.Run("PLAT-1/help-hints-per-os", func(t *testing.T) {
		for goos, want := range map[string]string{"linux": "$XDG_STATE_HOME", "darwin": "~/Library/Logs", "windows": "%LocalAppData%"} {
			if got, _ := pathHints(goos); len(got) < len(want) || got[:len(want)] != want {
				t.Errorf("pathHints(%q) log = %q, want prefix %q", goos, got, want)
			}
		}
	})
}

func TestVersionFlag(t *testing.T) {
	for name, f := range map[string]func([]string, IO) int{"dual-proxy": DualProxy, "claude-dual-proxy": Claude} {
		t.Run("PLAT-2/"+name+"-version-prints-version-and-commit", func(t *testing.T) {
			out, errOut, status := runCmd(t, f, nil, "--version")
			if status != 0 || !strings.HasPrefix(out, name+" version ") || !strings.Contains(out, "(commit ") {
				t.Fatalf("--version: status %d, out %q, err %q", status, out, errOut)
			}
		})
	}
}
