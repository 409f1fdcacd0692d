package signals

import (
	"bytes"
	"errors"
	"os"
	"slices"
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
// returns true. Processes that vanish while being read are skipped. It reads one file per
// process on the machine (hundreds on a desktop); [childProcs] is what Run uses.
func listProcs(keep func(procStat) bool) []procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procStat
	buf := make([]byte, 0, 1024)
	for _, e := range entries {
		name := e.Name()
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		if st, ok := readProcStat(name, &buf); ok && keep(st) {
			out = append(out, st)
		}
	}
	return out
}

// childProcs returns the parsed /proc/PID/stat of this process's children (zombies included)
// for which keep returns true. The children are listed by /proc/self/task/TID/children
// (proc(5); Linux 3.5, CONFIG_PROC_CHILDREN): a child is listed under the thread that started
// or, as subreaper, adopted it, so every thread's list is read — a few files instead of one per
// process on the machine. Without those files it falls back to [listProcs]. Like that scan, it
// can miss a child that appears while it reads; callers look again (SIGCHLD, cleanup rounds).
func childProcs(keep func(procStat) bool) []procStat {
	if !hasChildren() {
		return nil
	}
	self := os.Getpid()
	mine := func(st procStat) bool { return st.ppid == self && keep(st) }
	pids, ok := childPIDs()
	if !ok {
		return listProcs(mine)
	}
	var out []procStat
	buf := make([]byte, 0, 1024)
	for _, pid := range pids {
		if st, ok := readProcStat(strconv.Itoa(pid), &buf); ok && mine(st) {
			out = append(out, st)
		}
	}
	return out
}

// hasChildren reports whether this process has a child of any kind, running or zombie: waitid(2)
// P_ALL with WNOHANG|WNOWAIT|__WALL fails with ECHILD only when there is none, and reaps nothing.
// It lets [childProcs] skip its /proc reads (an open, read and close per thread: ≈ 25 system
// calls, three times per launch) in the common case of a child without descendants
// left. Any other result, including an error, counts as "maybe", so the scan runs as before.
func hasChildren() bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil)
		if !errors.Is(err, unix.EINTR) {
			return !errors.Is(err, unix.ECHILD)
		}
	}
}

// childPIDs returns the pids in this process's /proc/self/task/*/children files, each once;
// ok is false when none of them could be read (kernel without CONFIG_PROC_CHILDREN).
func childPIDs() (pids []int, ok bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, false
	}
	buf := make([]byte, 0, 256)
	for _, t := range tasks {
		b, err := readSmallFile("/proc/self/task/"+t.Name()+"/children", &buf)
		if err != nil {
			continue // the thread exited (its children moved to another thread) or no such file
		}
		ok = true
		for _, f := range bytes.Fields(b) {
			if pid, err := strconv.Atoi(string(f)); err == nil && pid > 0 && !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids, ok
}

// readProcStat reads and parses /proc/PID/stat (pid as a decimal string) into buf's storage.
func readProcStat(pid string, buf *[]byte) (procStat, bool) {
	b, err := readSmallFile("/proc/"+pid+"/stat", buf)
	if err != nil {
		return procStat{}, false
	}
	return parseProcStat(b)
}

// readSmallFile reads the whole file at path into *buf (grown as needed) with open, read and
// close only: os.ReadFile also stats the file and tries to register it with the netpoller,
// which doubles the system calls per /proc file.
func readSmallFile(path string, buf *[]byte) ([]byte, error) {
	fd, err := retryEINTR(func() (int, error) { return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0) })
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, cap(b)+512)
		}
		n, err := retryEINTR(func() (int, error) { return unix.Read(fd, b[len(b):cap(b)]) })
		if err != nil {
			return nil, err
		}
		if n == 0 {
			*buf = b
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// retryEINTR calls f until it fails with something other than EINTR.
func retryEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
	}
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
	zombies := childProcs(func(st procStat) bool {
		return st.state == 'Z' && st.pid != skipPID &&
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
	m := map[int]bool{}
	for _, st := range childProcs(func(procStat) bool { return true }) {
		m[st.pid] = true
	}
	return m
}

// cleanupEscaped ends, after the child's group was cleaned up, the descendants that left the
// group: with the subreaper in effect, every one of them was reparented to us.
func (s *supervisor) cleanupEscaped(known map[int]bool, childPID int) {
	if s.subreaper {
		s.cleanupOrphans(known, childPID)
	}
}

// cleanupOrphans ends descendants of the child that left its process
// group and session (setsid daemons) and were reparented to us as the
// subreaper after the child exited (no orphan survives the
// launcher). Children in known (which existed before the child started)
// and the child itself are left alone. Each orphan and its process group
// get SIGTERM, then SIGKILL after LeftoverGrace; all are reaped. Their own
// orphans are reparented to us in turn, so a few rounds are made.
func (s *supervisor) cleanupOrphans(known map[int]bool, childPID int) {
	find := func() []procStat {
		return childProcs(func(st procStat) bool {
			return !known[st.pid] && st.pid != childPID
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
