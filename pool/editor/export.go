package editor

import (
	"io/fs"

	"go.yaml.in/yaml/v3"
)

// The text edit and the atomic write of a save, for the other section of
// the same file: internal/app/settings writes a running instance's changed
// proxy settings into proxy: with them, so both keep the
// file's comments, key order and mode the same way.

// ParseDoc parses YAML (or JSON) into a document node; an empty text is an
// empty mapping. Errors are *config.ConfigError with the position.
func ParseDoc(data []byte) (*yaml.Node, error) { return parseDoc(data) }

// CopyDoc returns a deep copy of a document tree (aliases point into the
// copy), to edit while the original stays the disk's.
func CopyDoc(doc *yaml.Node) *yaml.Node { return deepCopy(doc) }

// EditText is data, whose tree is disk, edited to read as merged: only what
// differs is rewritten (spliceDoc: unchanged entries keep their lines and
// comments byte for byte), else yaml.v3 renders the whole document at the
// file's indentation.
func EditText(data []byte, disk, merged *yaml.Node) ([]byte, error) {
	l := &loaded{data: data, doc: disk}
	return l.text(merged)
}

// WriteFile replaces the file at path (content old) with data atomically:
// PATH.bak (0600) keeps old, a synced temporary file is renamed over the
// file, a symlink's target is replaced, and the file keeps its mode except
// that secret (it holds a credential) makes it 0600 where the OS has
// permission bits (SPEC POOL-15, POOL-22). It returns the new mode and
// the backup's path.
func WriteFile(path string, old, data []byte, secret bool) (fs.FileMode, string, error) {
	s, err := writeFile(path, old, data, secret)
	return s.Mode, s.Backup, err
}
