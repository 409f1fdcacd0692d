//go:build unix

package main

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ownGroup starts a measured process in its own process group, so killGroup ends its children too.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup SIGKILLs the process group p leads.
func killGroup(p *os.Process) { syscall.Kill(-p.Pid, syscall.SIGKILL) }

// kernelName is the kernel and its release for the document header ("Linux 6.1.0-…").
func kernelName() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "unknown kernel"
	}
	return unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
}

// raiseNoFile raises RLIMIT_NOFILE (soft and, as root, hard) to want; the
// children inherit it. It returns the soft limit in effect.
func raiseNoFile(want uint64) uint64 {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return 1024
	}
	if l.Cur >= want {
		return l.Cur
	}
	n := syscall.Rlimit{Cur: want, Max: max(l.Max, want)}
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &n) != nil {
		n = syscall.Rlimit{Cur: l.Max, Max: l.Max}
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &n)
	}
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
	return l.Cur
}

// selfCPU is the user+system CPU time this process has used so far
// (getrusage(2)); the in-process benchmarks report it per operation.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
