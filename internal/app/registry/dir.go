package registry

import (
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
)

// DirFor is the registry directory for goos (a runtime.GOOS value), the
// environment getenv, the temporary directory tempDir and the user id uid
// (SPEC OPS-6):
//
//	Windows   %LocalAppData%\dual-proxy\run, else TEMP\dual-proxy (per user)
//	others    $XDG_RUNTIME_DIR/dual-proxy when it is absolute, else
//	          TEMP/dual-proxy-UID (macOS: $TMPDIR is per user already)
//
// It is a pure function, so every row is tested on every OS.
func DirFor(goos string, getenv func(string) string, tempDir string, uid int) string {
	if goos == "windows" {
		if d := getenv("LOCALAPPDATA"); d != "" {
			return winJoin(d, "dual-proxy", "run")
		}
		return winJoin(tempDir, "dual-proxy")
	}
	if d := getenv("XDG_RUNTIME_DIR"); strings.HasPrefix(d, "/") {
		return path.Join(d, "dual-proxy")
	}
	return path.Join(tempDir, "dual-proxy-"+strconv.Itoa(uid))
}

// HostDir is DirFor for the running OS and user, with the environment read
// through getenv (the caller owns the environment).
func HostDir(getenv func(string) string) string {
	return DirFor(runtime.GOOS, getenv, os.TempDir(), os.Getuid())
}

func winJoin(parts ...string) string {
	for i := range parts {
		if i > 0 {
			parts[i] = strings.Trim(parts[i], `\/`)
		} else {
			parts[i] = strings.TrimRight(parts[i], `\/`)
		}
	}
	return strings.Join(parts, `\`)
}
