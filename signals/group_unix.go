//go:build linux || darwin

package signals

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// groupAlive reports whether any process (including an unreaped zombie) is left in process
// group pgid: kill(-pgid, 0) fails with ESRCH only for an empty group.
func groupAlive(pgid int) bool {
	return !errors.Is(unix.Kill(-pgid, 0), unix.ESRCH)
}

// sweepSession ends the processes that members reports in session sid: SIGTERM to each, SIGKILL
// LeftoverGrace later to those still listed. It is macOS's cleanup of what the child left in its
// PTY session (no subreaper there); members lists the live processes of a session other than
// this one (sysctl on macOS; a /proc reader in the Linux test that runs it).
func (s *supervisor) sweepSession(sid int, members func(sid int) []int) {
	left := members(sid)
	if len(left) == 0 {
		return
	}
	s.log.Info("processes left in child's session: terminating", "sid", sid, "count", len(left))
	for _, pid := range left {
		_ = unix.Kill(pid, unix.SIGTERM)
	}
	deadline := time.Now().Add(LeftoverGrace)
	for time.Now().Before(deadline) && len(members(sid)) > 0 {
		time.Sleep(20 * time.Millisecond) // polling interval; the deadline bounds it
	}
	for _, pid := range members(sid) {
		s.log.Info("process left in child's session: killing", "sid", sid, "pid", pid)
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}
