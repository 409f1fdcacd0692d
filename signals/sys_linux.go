package signals

import (
	"errors"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// termios requests of tcgetattr/tcsetattr(TCSANOW) on Linux (ioctl_tty(2)).
const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
)

// pipeCloexec creates a pipe whose both ends are close-on-exec (pipe2(2) O_CLOEXEC).
func pipeCloexec(p *[2]int) error { return unix.Pipe2(p[:], unix.O_CLOEXEC) }

// withTTOUBlocked runs fn with SIGTTOU blocked on the calling thread (pthread_sigmask(3)), so a
// background process's tcsetpgrp is not stopped by the kernel.
func withTTOUBlocked(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	sigaddset(&set, unix.SIGTTOU)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old); err != nil {
		return err
	}
	defer func() { _ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil) }()
	return fn()
}

// sigaddset adds sig to set (sigsetops(3)).
func sigaddset(set *unix.Sigset_t, sig syscall.Signal) {
	n := uint(sig - 1)
	set.Val[n/64] |= 1 << (n % 64)
}

// waitInput is how copyInput waits for the terminal on Linux: poll(2).
var waitInput = pollInput

// pollInput is waitInput with poll(2); see selectInput for the contract.
func pollInput(in, cancel int) (ready, stop bool) {
	fds := []unix.PollFd{{Fd: int32(in), Events: unix.POLLIN}, {Fd: int32(cancel), Events: unix.POLLIN}}
	if _, err := unix.Poll(fds, -1); err != nil {
		return false, !errors.Is(err, unix.EINTR)
	}
	if fds[1].Revents != 0 || fds[0].Revents&unix.POLLNVAL != 0 {
		return false, true
	}
	return fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0, false
}
