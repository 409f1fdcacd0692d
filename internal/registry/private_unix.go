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
