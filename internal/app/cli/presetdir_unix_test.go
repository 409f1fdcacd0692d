//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"testing"
)

func TestGeminiTrusts(t *testing.T) {
	t.Run("POOL-20/root-owned-path-not-writable-by-others-is-read", func(t *testing.T) {
		if !geminiTrusts("/etc/passwd") {
			t.Fatal("/etc/passwd: want trusted (root's, 0644, under root's 0755 directories)")
		}
	})
	t.Run("POOL-20/file-under-world-writable-tmp-is-skipped", func(t *testing.T) {
		// t.TempDir is under the world-writable temporary directory, as the
		// launcher's file was without XDG_RUNTIME_DIR.
		p := filepath.Join(t.TempDir(), "settings.json")
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if geminiTrusts(p) {
			t.Fatal("a path under the temporary directory counted as trusted")
		}
	})
}
