package editor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Version is the version of a file's content the editor hands out and
// expects back in If-Match: "sha256:" and the hex SHA-256 of the bytes.
func Version(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// sameVersion compares an If-Match value (quoted as an entity tag or
// bare, RFC 9110 §13.1.1) with a version.
func sameVersion(ifMatch, version string) bool {
	v := strings.TrimSpace(ifMatch)
	v = strings.TrimPrefix(v, "W/")
	return strings.Trim(v, `"`) == version
}

// saved tells what a write did.
type saved struct {
	Mode      fs.FileMode // of the new file
	Tightened bool        // mode was made 0600 because the file holds a literal key
	Backup    string      // the previous content's file (PATH.bak)
}

// writeFile replaces the file at path with data atomically:
// the previous content goes to PATH.bak (mode 0600, it may hold keys), the
// new one is written to a temporary file in the same directory, synced and
// renamed over the old, and the directory is synced. A symlink is followed:
// its target is replaced, the link stays. The file keeps its mode, except
// that a file holding a literal key is written 0600 (a key lives
// only in a file nobody else can read) where the OS has permission bits
// (permBits); on Windows the user's profile ACL protects it and the mode
// reported is the file's own.
func writeFile(path string, old, data []byte, literalKey bool) (saved, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return saved{}, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return saved{}, err
	}
	s := saved{Mode: fi.Mode().Perm(), Backup: real + ".bak"}
	if literalKey && hostPermBits && s.Mode&0o077 != 0 {
		s.Mode, s.Tightened = 0o600, true
	}
	if err := replace(s.Backup, old, 0o600); err != nil {
		return saved{}, fmt.Errorf("writing the backup: %w", err)
	}
	if err := replace(real, data, s.Mode); err != nil {
		return saved{}, err
	}
	return s, nil
}

// hostPermBits is permBits of the running OS.
var hostPermBits = permBits(runtime.GOOS)

// permBits reports whether goos (a runtime.GOOS value) has Unix permission
// bits. Windows has only a read-only attribute (Go shows 0666 or 0444):
// "tightening" to 0600 there would change nothing but the reported mode.
func permBits(goos string) bool { return goos != "windows" && goos != "plan9" }

// replace writes data to a temporary file next to path, syncs it and renames
// it over path, then syncs the directory (where the OS allows it).
func replace(path string, data []byte, mode fs.FileMode) error {
	name, err := writeTemp(path, data, mode)
	if err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		_ = os.Remove(name)
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// createFile creates the configuration file at path with data (mode 0600:
// the page may have put a literal key in it) and its
// directory (0700) when missing. The content appears at once and whole: a
// synced temporary file is hard-linked to path, which fails when a file
// appeared there since the editor looked (it is never overwritten).
func createFile(path string, data []byte) (saved, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return saved{}, err
	}
	name, err := writeTemp(path, data, 0o600)
	if err != nil {
		return saved{}, err
	}
	defer func() { _ = os.Remove(name) }()
	if err := os.Link(name, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return saved{}, fmt.Errorf("%s was created by someone else meanwhile; load it again", path)
		}
		return saved{}, err
	}
	syncDir(filepath.Dir(path))
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm() // the file's own: 0666 on Windows, which has no permission bits
	}
	return saved{Mode: mode}, nil
}

// writeTemp writes data, synced, to a new temporary file next to path and
// returns its name.
func writeTemp(path string, data []byte, mode fs.FileMode) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", err
	}
	name := tmp.Name()
	err = tmp.Chmod(mode)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name)
		return "", err
	}
	return name, nil
}

// syncDir makes a rename in dir durable; directories cannot be synced on
// every OS (Windows), where this does nothing.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
