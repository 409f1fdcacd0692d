package signals

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// procStat is the part of /proc/PID/stat (proc(5)) the reaper needs.
type procStat struct {
	pid     int
	state   byte // 'R', 'S', 'Z' (zombie), …
	ppid    int
	pgrp    int
	session int
}

// parseProcStat parses the content of /proc/PID/stat: "pid (comm) state ppid pgrp session …".
// comm may itself contain spaces and parentheses, so the fields after it are located from the
// last ')'. ok is false for anything malformed.
func parseProcStat(b []byte) (st procStat, ok bool) {
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open <= 0 || closing < open {
		return procStat{}, false
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil || pid <= 0 {
		return procStat{}, false
	}
	fields := bytes.Fields(b[closing+1:])
	if len(fields) < 4 || len(fields[0]) != 1 {
		return procStat{}, false
	}
	st = procStat{pid: pid, state: fields[0][0]}
	for i, dst := range []*int{&st.ppid, &st.pgrp, &st.session} {
		v, err := strconv.Atoi(string(fields[i+1]))
		if err != nil {
			return procStat{}, false
		}
		*dst = v
	}
	return st, true
}

// listProcs returns the parsed /proc/PID/stat of every process visible in /proc for which keep
// returns true. Processes that vanish while being read are skipped.
func listProcs(keep func(procStat) bool) []procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procStat
	for _, e := range entries {
		name := e.Name()
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		if st, ok := parseProcStat(b); ok && keep(st) {
			out = append(out, st)
		}
	}
	return out
}

// subreaper makes the calling process a child subreaper (prctl(2) PR_SET_CHILD_SUBREAPER), so
// that descendants orphaned by the child are reparented to us instead of to PID 1 (which, in
// some containers, never reaps them) and can be reaped by [reapDescendants]. The returned
// function restores the previous setting. ok is false when the kernel refused.
func subreaper() (restore func(), ok bool) {
	var prev int32
	// PR_GET_CHILD_SUBREAPER stores an int at the address in arg2.
	if _, _, errno := unix.Syscall(unix.SYS_PRCTL, unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&prev)), 0); errno != 0 {
		return func() {}, false
	}
	if prev != 0 {
		return func() {}, true
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return func() {}, false
	}
	return func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) }, true
}

// reapDescendants reaps (wait4 WNOHANG) every zombie child of this process that belongs to the
// child's process group (pgid) or, when inSession is true, to its session (sid == pgid, PTY
// mode), except the child itself (skipPID), which exec.Cmd.Wait reaps. Zombies of other
// process groups are left alone so that other exec.Cmd values in the same program keep their
// exit statuses. It returns the number of processes reaped.
func reapDescendants(pgid, skipPID int, inSession bool) int {
	self := os.Getpid()
	zombies := listProcs(func(st procStat) bool {
		return st.ppid == self && st.state == 'Z' && st.pid != skipPID &&
			(st.pgrp == pgid || (inSession && st.session == pgid))
	})
	n := 0
	for _, z := range zombies {
		var ws unix.WaitStatus
		for range 3 {
			pid, err := unix.Wait4(z.pid, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if pid == z.pid {
				n++
			}
			break
		}
	}
	return n
}

// ourChildren returns the pids of this process's current children.
func ourChildren() map[int]bool {
	self := os.Getpid()
	m := map[int]bool{}
	for _, st := range listProcs(func(st procStat) bool { return st.ppid == self }) {
		m[st.pid] = true
	}
	return m
}

// cleanupEscaped ends, after the child's group was cleaned up, the descendants that left the
// group: with the subreaper in effect, every one of them was reparented to us (SPEC SIG-2).
func (s *supervisor) cleanupEscaped(known map[int]bool, childPID int) {
	if s.subreaper {
		s.cleanupOrphans(known, childPID)
	}
}

// cleanupOrphans ends descendants of the child that left its process
// group and session (setsid daemons) and were reparented to us as the
// subreaper after the child exited (SPEC SIG-2: no orphan survives the
// launcher). Children in known (which existed before the child started)
// and the child itself are left alone. Each orphan and its process group
// get SIGTERM, then SIGKILL after LeftoverGrace; all are reaped. Their own
// orphans are reparented to us in turn, so a few rounds are made.
func (s *supervisor) cleanupOrphans(known map[int]bool, childPID int) {
	self := os.Getpid()
	find := func() []procStat {
		return listProcs(func(st procStat) bool {
			return st.ppid == self && !known[st.pid] && st.pid != childPID
		})
	}
	reap := func(pid int) {
		var ws unix.WaitStatus
		for range 3 {
			if _, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}
	for round := 0; round < 4; round++ {
		orphans := find()
		if len(orphans) == 0 {
			return
		}
		s.log.Info("orphaned descendants of the child left: terminating", "count", len(orphans))
		for _, o := range orphans {
			if o.state == 'Z' {
				reap(o.pid)
				continue
			}
			if o.pgrp > 1 && o.pgrp != unix.Getpgrp() {
				_ = unix.Kill(-o.pgrp, unix.SIGTERM) // the orphan's whole group, if it leads one
			}
			_ = unix.Kill(o.pid, unix.SIGTERM)
		}
		deadline := time.Now().Add(LeftoverGrace)
		for time.Now().Before(deadline) {
			alive := 0
			for _, o := range find() {
				if o.state == 'Z' {
					reap(o.pid)
				} else {
					alive++
				}
			}
			if alive == 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, o := range find() {
			if o.state != 'Z' {
				_ = unix.Kill(o.pid, unix.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
		for _, o := range find() {
			if o.state == 'Z' {
				reap(o.pid)
			}
		}
	}
}
