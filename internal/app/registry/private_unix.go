//go:build unix

package registry

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// alive reports whether process pid exists (signal 0; EPERM means it runs
// as another user, which still counts as running).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// checkPrivate refuses a directory that is a symlink, owned by another
// user, or open to others; a 0755 directory of our own is tightened to 0700.
func checkPrivate(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("not a directory (a symlink?)")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("owned by uid %d, not by this user", st.Uid)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// checkTrusted refuses to read entries from dir unless no one else could
// have written them: dir must be a real directory (not a symlink) owned by
// this user without group or other write permission. Entries name an
// address that status and pool test send the entry's token to.
func checkTrusted(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New("not a directory (a symlink?)")
	}
	if !ownedByMe(fi) {
		return errors.New("owned by another user")
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return errors.New("others can write to it")
	}
	return nil
}

// ownedByMe reports whether fi's owner is this process's user.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
