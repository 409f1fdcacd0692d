package cli

import (
	"os"
	"path"
	"path/filepath"
	"runtime"

	"github.com/dual-proxy/dual-proxy/envrewrite"
)

// Agent presets that are files (Gemini CLI's system settings, Claude Code's
// --settings layer, Cline's provider settings) go into a private directory
// per launch, removed when the child has ended. Its
// parent is in the user's own state or cache directory, never the shared
// temporary directory: an agent may skip a file under a world-writable
// ancestor (Gemini CLI skips its system settings there: "Parent directory
// '/tmp' is insecure"), and the files can hold the per-launch pool token.
//
//	Linux, BSD   $XDG_STATE_HOME or ~/.local/state /dual-proxy/presets
//	macOS        ~/Library/Caches/dual-proxy/presets
//	Windows      %LocalAppData%\dual-proxy\presets

// presetParentFor is the parent of the per-launch preset directories on
// goos (a runtime.GOOS value) for the environment env (read with goos's
// name rule). Without a home directory it falls back to $XDG_RUNTIME_DIR
// (private by the XDG rules), then to tempDir.
func presetParentFor(goos string, env []string, tempDir string) string {
	names := envrewrite.NamesFor(goos)
	get := func(k string) string { v, _ := names.Get(env, k); return v }
	switch goos {
	case "windows":
		local := get("LOCALAPPDATA")
		if local == "" && get("USERPROFILE") != "" {
			local = winJoin(get("USERPROFILE"), "AppData", "Local")
		}
		if local == "" {
			local = tempDir
		}
		return winJoin(local, "dual-proxy", "presets")
	case "darwin", "ios":
		if h := get("HOME"); h != "" {
			return path.Join(h, "Library", "Caches", "dual-proxy", "presets")
		}
	default:
		if d := get("XDG_STATE_HOME"); path.IsAbs(d) {
			return path.Join(d, "dual-proxy", "presets")
		}
		if h := get("HOME"); h != "" {
			return path.Join(h, ".local", "state", "dual-proxy", "presets")
		}
	}
	if d := get("XDG_RUNTIME_DIR"); path.IsAbs(d) {
		return path.Join(d, "dual-proxy-presets")
	}
	return path.Join(tempDir, "dual-proxy-presets")
}

// writePreset writes data (mode 0600) as the file name in a new directory
// (0700) under the preset parent for env, creating the parent (0700) when
// missing. It returns the file's path and the cleanup that removes the
// directory; on an error nothing is left behind.
func writePreset(env []string, name string, data []byte) (string, func(), error) {
	parent := filepath.FromSlash(presetParentFor(runtime.GOOS, env, os.TempDir()))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp(parent, "launch-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		cleanup()
		return "", nil, err
	}
	return p, cleanup, nil
}
