package signals

import (
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// termios requests of tcgetattr/tcsetattr(TCSANOW) on macOS (termios(4)).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)

// pipeCloexec creates a pipe whose both ends are close-on-exec. macOS has no pipe2(2): the flags
// are set right after pipe(2) under syscall.ForkLock, as package os does there, so no
// concurrent exec.Cmd.Start inherits the descriptors.
func pipeCloexec(p *[2]int) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	if err := unix.Pipe(p[:]); err != nil {
		return err
	}
	unix.CloseOnExec(p[0])
	unix.CloseOnExec(p[1])
	return nil
}

// withTTOUBlocked runs fn with SIGTTOU ignored, so a background process's tcsetpgrp is not
// stopped by the kernel. x/sys/unix offers no pthread_sigmask on macOS, so unlike on Linux the
// ignore is process-wide for the duration of fn: a SIGTTOU another thread earns meanwhile is
// ignored too (harmless: the launcher writes nothing to the terminal at that point).
func withTTOUBlocked(fn func() error) error {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	return fn()
}

// waitInput is how copyInput waits for the terminal on macOS: select(2), since macOS's poll(2)
// does not support devices and so cannot wait on a terminal.
var waitInput = selectInput
