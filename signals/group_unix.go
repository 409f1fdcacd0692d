//go:build linux || darwin

package signals

import (
	"errors"

	"golang.org/x/sys/unix"
)

// groupAlive reports whether any process (including an unreaped zombie) is left in process
// group pgid: kill(-pgid, 0) fails with ESRCH only for an empty group.
func groupAlive(pgid int) bool {
	return !errors.Is(unix.Kill(-pgid, 0), unix.ESRCH)
}
