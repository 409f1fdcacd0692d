package cli

import (
	"fmt"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// A channel key written in the config file (api_key) lives only in a file
// no other user can read (whoever reads it can spend the key); the pool
// editor writes such a file 0600, but a file written by hand keeps the
// mode it was created with, often 0644, or on Windows the access list it
// inherited. At start
// the instance says so, naming the file, its mode or the groups its
// access list lets read it, the channels and the fix
// (readableByOthers: keyfile_other.go, keyfile_windows.go).

// othersRead reports whether mode lets users other than the owner read
// the file on goos (a runtime.GOOS value): group or other read bits on
// Unix. On Windows the file's ACL decides and Go's mode shows none of it
// (aclReaders reads the ACL; keyfile_windows.go).
func othersRead(goos string, mode fs.FileMode) bool {
	if goos == "windows" || goos == "plan9" {
		return false
	}
	return mode.Perm()&0o044 != 0
}

// fileACE is one entry of a Windows file's access list (DACL) as the
// readable-key check reads it.
type fileACE struct {
	allow       bool   // ACCESS_ALLOWED_ACE_TYPE; else ACCESS_DENIED_ACE_TYPE
	inheritOnly bool   // INHERIT_ONLY_ACE: for children, not the file itself
	mask        uint32 // access mask
	sid         string // trustee, "S-1-…"
}

// Windows access rights that let a trustee read a file's content.
const (
	fileReadData   = 0x00000001 // FILE_READ_DATA
	aceGenericAll  = 0x10000000 // GENERIC_ALL
	aceGenericRead = 0x80000000 // GENERIC_READ
	fileReadRights = fileReadData | aceGenericAll | aceGenericRead
)

// wellKnownReaders are the groups of every other user of a Windows
// machine, by SID, with the names a warning gives them.
var wellKnownReaders = []struct{ sid, name string }{
	{"S-1-1-0", "Everyone"},
	{"S-1-5-32-545", "Users"},
	{"S-1-5-11", "Authenticated Users"},
}

// aclReaders are the names of the well-known groups of other users
// (Everyone, Users, Authenticated Users) that a file's access list lets
// read it, in wellKnownReaders order: an allow entry with a read right for
// the group, not preceded by a deny entry of a read right for it (entries
// apply in order, the first that decides wins). nilDACL: no access list,
// which lets everyone do everything. A pure function, tested on every OS.
func aclReaders(nilDACL bool, aces []fileACE) []string {
	if nilDACL {
		return []string{wellKnownReaders[0].name}
	}
	var out []string
	for _, g := range wellKnownReaders {
		for _, a := range aces {
			if a.inheritOnly || a.sid != g.sid || a.mask&fileReadRights == 0 {
				continue
			}
			if a.allow {
				out = append(out, g.name)
			}
			break
		}
	}
	return out
}

// joinAnd is names as a sentence does: "A", "A and B", "A, B and C".
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
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
	how, fix := readableByOthers(path)
	if how == "" {
		return ""
	}
	return fmt.Sprintf("%s holds the api_key of channel(s) %s and other users can read it (%s): run %s, or move each key to an environment variable named by api_key_env",
		path, strings.Join(ids, ", "), how, fix)
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
