//go:build unix

package registry

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// plant writes an entry for this process (alive) with a token file into
// dir as an attacker who can write there would.
func plant(t *testing.T, dir, token string) {
	t.Helper()
	stamp, _ := procStart(os.Getpid()) // the real stamp, so only the directory check refuses it
	data := `{"program":"dual-proxy","pid":` + itoa(os.Getpid()) + `,"proc_start":` + strconv.FormatInt(stamp, 10) +
		`,"addr":"127.0.0.1:9","pools":["default"],"has_token":true,"started":"` + time.Now().Format(time.RFC3339) + `"}`
	if err := os.WriteFile(filepath.Join(dir, itoa(os.Getpid())+".json"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, itoa(os.Getpid())+".token"), []byte(token), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRegistryNotTrustedWhenOthersCanWrite: `dual-proxy status` and `pool
// test` send an entry's token to the entry's address, so entries are read
// only from a directory no one else could have written to, and a token file
// is read only when it is this user's regular file (SPEC OPS-6). Otherwise a
// user who created /tmp/dual-proxy-UID first, or a symlinked token, makes
// the victim send a file of theirs (a key on one line) to a port of the
// attacker's choosing.
func TestRegistryNotTrustedWhenOthersCanWrite(t *testing.T) {
	t.Run("OPS-6/list-refuses-a-dir-others-can-write", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "reg")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o777)
		plant(t, dir, "planted")
		if es, err := List(dir); err == nil || len(es) != 0 {
			t.Fatalf("listed %+v (err %v) from a world-writable directory", es, err)
		}
	})
	t.Run("OPS-6/list-refuses-a-dir-of-another-user", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("needs root to give a directory to another user; the world-writable case covers the check")
		}
		dir := filepath.Join(t.TempDir(), "reg")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		plant(t, dir, "planted")
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if es, err := List(dir); err == nil || len(es) != 0 {
			t.Fatalf("listed %+v (err %v) from another user's directory", es, err)
		}
	})
	t.Run("OPS-6/list-refuses-a-symlinked-dir", func(t *testing.T) {
		target := filepath.Join(t.TempDir(), "real")
		if err := os.Mkdir(target, 0o700); err != nil {
			t.Fatal(err)
		}
		plant(t, target, "planted")
		link := filepath.Join(t.TempDir(), "reg")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if es, err := List(link); err == nil || len(es) != 0 {
			t.Fatalf("listed %+v (err %v) through a symlink", es, err)
		}
	})
	t.Run("OPS-6/token-symlink-not-followed", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "reg")
		if _, err := Register(dir, Entry{Program: "dual-proxy", Addr: "127.0.0.1:9"}, "tok"); err != nil {
			t.Fatal(err)
		}
		secret := filepath.Join(t.TempDir(), "api-key")
		os.WriteFile(secret, []byte("sk-victim-secret\n"), 0o600)
		tok := filepath.Join(dir, itoa(os.Getpid())+".token")
		os.Remove(tok)
		if err := os.Symlink(secret, tok); err != nil {
			t.Fatal(err)
		}
		es, err := List(dir)
		if err != nil || len(es) != 1 {
			t.Fatalf("%+v %v", es, err)
		}
		if got, err := es[0].Token(); err == nil || strings.Contains(got, "secret") {
			t.Fatalf("token read through a symlink: %q %v", got, err)
		}
	})
}
