// Package version is the release stamp of the dual-proxy binaries: `dual-proxy
// --version` and `claude-dual-proxy --version` print [String].
//
// Release builds (.goreleaser.yaml) set Version and Commit with
//
//	-ldflags "-X github.com/dual-proxy/dual-proxy/internal/app/version.Version=1.2.3
//	          -X github.com/dual-proxy/dual-proxy/internal/app/version.Commit=<full hash>"
//
// Without them (go install, go build) the module version and the VCS revision that the go
// command records in the binary (runtime/debug.ReadBuildInfo) are used instead.
package version

import (
	"runtime/debug"
	"strings"
)

// Version is the release version without a leading "v" ("1.2.3"), set at link time; "" when not
// stamped.
var Version = ""

// Commit is the full commit hash the release was built from, set at link time; "" when not
// stamped.
var Commit = ""

// String returns "VERSION (commit COMMIT)", e.g. "1.2.3 (commit 0123456789ab)": the stamped
// values, else what the build info holds ("(devel)" and "unknown" when nothing is known).
func String() string {
	bi, _ := debug.ReadBuildInfo()
	v, c := resolve(Version, Commit, bi)
	return v + " (commit " + c + ")"
}

// resolve picks the version and the (12-character) commit: the stamped ones when set, else the
// main module's version and the vcs.revision setting of bi (with "-dirty" when vcs.modified is
// true). bi may be nil.
func resolve(stampedVersion, stampedCommit string, bi *debug.BuildInfo) (version, commit string) {
	version, commit = stampedVersion, stampedCommit
	if bi != nil {
		if version == "" && bi.Main.Version != "" {
			version = strings.TrimPrefix(bi.Main.Version, "v")
		}
		if commit == "" {
			dirty := false
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					commit = s.Value
				case "vcs.modified":
					dirty = s.Value == "true"
				}
			}
			if commit != "" && dirty {
				commit = short(commit) + "-dirty"
			}
		}
	}
	if version == "" {
		version = "(devel)"
	}
	if commit == "" {
		return version, "unknown"
	}
	return version, short(commit)
}

// short cuts a commit hash to 12 characters, leaving a "-dirty" suffix in place.
func short(c string) string {
	h, suffix, _ := strings.Cut(c, "-")
	if len(h) > 12 {
		h = h[:12]
	}
	if suffix != "" {
		return h + "-" + suffix
	}
	return h
}
