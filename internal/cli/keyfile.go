package cli

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// A channel key written in the config file (api_key) lives only in a file
// no other user can read (SPEC POOL-15); the pool editor writes such a
// file 0600, but a file written by hand keeps the mode it was created
// with, often 0644. At start the instance says so, naming the file, its
// mode, the channels and the fix.

// othersRead reports whether mode lets users other than the owner read
// the file on goos (a runtime.GOOS value). Only Unix permission bits tell
// it cheaply; on Windows the file's ACL decides and Go's mode shows none
// of it (the user's profile, where the file lives by default, is private),
// so nothing is reported there.
func othersRead(goos string, mode fs.FileMode) bool {
	if goos == "windows" || goos == "plan9" {
		return false
	}
	return mode.Perm()&0o044 != 0
}

// literalKeyChannels are the ids of cfg's channels whose key is written
// in the file (api_key, not api_key_env).
func literalKeyChannels(cfg *config.Config) []string {
	var ids []string
	for _, ch := range cfg.Channels {
		if ch.APIKeyEnv == "" && ch.HasKey() {
			ids = append(ids, ch.ID)
		}
	}
	return ids
}

// readableKeyWarning is the warning for path when cfg (read from it) holds
// a literal key and other users can read the file; "" otherwise.
func readableKeyWarning(path string, cfg *config.Config) string {
	if path == "" || cfg == nil {
		return ""
	}
	ids := literalKeyChannels(cfg)
	if len(ids) == 0 {
		return ""
	}
	fi, err := os.Stat(path)
	if err != nil || !othersRead(runtime.GOOS, fi.Mode()) {
		return ""
	}
	return fmt.Sprintf("%s holds the api_key of channel(s) %s and other users can read it (mode %04o): run chmod 600 %s, or move each key to an environment variable named by api_key_env",
		path, strings.Join(ids, ", "), fi.Mode().Perm(), path)
}

// warnReadableKeys logs readableKeyWarning of s's config file, if any, and
// reports it ("" for none).
func warnReadableKeys(s *Settings, log *slog.Logger) string {
	w := readableKeyWarning(s.ConfigPath, s.Pool)
	if w != "" {
		log.Warn(w)
	}
	return w
}
