//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"syscall"
)

// geminiTrusts reports whether Gemini CLI (0.61) reads the system settings
// file at p: it skips one unless the file and every directory above it are
// owned by root and writable by neither group nor others (its settings
// loader's path security check), so a file a non-root user writes is never
// read.
func geminiTrusts(p string) bool {
	for {
		fi, err := os.Stat(p)
		if err != nil {
			return false
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 {
			return false
		}
		parent := filepath.Dir(p)
		if parent == p {
			return true
		}
		p = parent
	}
}
