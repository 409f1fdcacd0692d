package signals

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// macOS has no child subreaper: descendants orphaned by the child are reparented to launchd
// (PID 1), which reaps them, so there are no zombies of ours to collect beyond the child, which
// exec.Cmd.Wait reaps. What can still be found of the child's descendants after it exited is
// its process group (cleanupGroup) and, in PTY mode, its session: the session was created for
// the child, so every process still in it is a descendant. A descendant that called setsid(2)
// (a daemon), or in plain mode moved to another process group, escapes.

// sZomb is the p_stat of a zombie (sys/proc.h SZOMB).
const sZomb = 5

// subreaper reports that no subreaper is available.
func subreaper() (restore func(), ok bool) { return func() {}, false }

// reapDescendants is never needed without a subreaper (launchd reaps the orphans).
func reapDescendants(pgid, skipPID int, inSession bool) int { return 0 }

// ourChildren is only needed for the subreaper's orphan cleanup.
func ourChildren() map[int]bool { return nil }

// cleanupEscaped ends, in PTY mode, the processes still in the child's session after its
// process group was cleaned up (job-control groups of a shell the child ran, for instance).
func (s *supervisor) cleanupEscaped(_ map[int]bool, _ int) {
	if s.pty != nil && s.pgid > 1 {
		s.sweepSession(s.pgid, sessionMembers)
	}
}

// sessionMembers returns the pids of the processes (other than this one) whose session is sid,
// from the kernel's process table (sysctl kern.proc.all) and getsid(2).
func sessionMembers(sid int) []int {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []int
	for _, p := range procs {
		pid := int(p.Proc.P_pid)
		if pid <= 1 || pid == self || p.Proc.P_stat == sZomb {
			continue // a zombie is reaped by its parent (launchd for orphans)
		}
		if got, err := unix.Getsid(pid); err == nil && got == sid {
			out = append(out, pid)
		} else if err != nil && !errors.Is(err, unix.ESRCH) && int(p.Eproc.Pgid) == sid {
			out = append(out, pid) // getsid refused: the session leader's group is still a match
		}
	}
	return out
}
