package dial

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLoadCAFileRefusesDevicesAndHugeFiles pins that a gateway CA file is
// read with a bound (SPEC GW-6, OPS-7): a device is refused before any
// read, and a regular file larger than MaxCAFile is refused, each with an
// error naming the file.
func TestLoadCAFileRefusesDevicesAndHugeFiles(t *testing.T) {
	t.Run("GW-6/dev-zero-refused", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("no /dev/zero")
		}
		_, err := LoadCAFile("/dev/zero")
		if err == nil || !strings.Contains(err.Error(), "/dev/zero: not a regular file") {
			t.Fatalf("LoadCAFile(/dev/zero) = %v, want not a regular file", err)
		}
	})
	t.Run("GW-6/directory-refused", func(t *testing.T) {
		dir := t.TempDir()
		if _, err := LoadCAFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("LoadCAFile(dir) = %v, want not a regular file", err)
		}
	})
	t.Run("GW-6/oversized-file-refused", func(t *testing.T) {
		name := filepath.Join(t.TempDir(), "big.pem")
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		// A sparse file: its size is over the bound without writing it.
		if err := f.Truncate(MaxCAFile + 1); err != nil {
			t.Fatal(err)
		}
		f.Close()
		_, err = LoadCAFile(name)
		if err == nil || !strings.Contains(err.Error(), "larger than") || !strings.Contains(err.Error(), name) {
			t.Fatalf("LoadCAFile(big) = %v, want larger than, naming the file", err)
		}
	})
	t.Run("GW-6/small-file-read-through", func(t *testing.T) {
		name := filepath.Join(t.TempDir(), "edge.pem")
		if err := os.WriteFile(name, make([]byte, 1024), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadCAFile(name)
		if err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
			t.Fatalf("LoadCAFile(small non-PEM) = %v, want no PEM certificate", err)
		}
	})
}
