//go:build linux || darwin

package signals

import (
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// startPlain starts cmd with inherited stdio in its own process group (stdin is not a
// terminal, or NoPTY is set). With NoPTY on a terminal of which we are the foreground process group, the
// child's group becomes the foreground group (SysProcAttr.Foreground) so that it can read the
// terminal without SIGTTIN; [foreground.restore] takes the terminal back.
func (s *supervisor) startPlain() error {
	cmd, o := s.cmd, s.opts
	if cmd.Stdin == nil && o.Stdin != nil {
		cmd.Stdin = o.Stdin
	}
	if cmd.Stdout == nil && o.Stdout != nil {
		cmd.Stdout = o.Stdout
	}
	if cmd.Stderr == nil && o.Stderr != nil {
		cmd.Stderr = o.Stderr
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0

	var fg *foreground
	if o.Stdin != nil && term.IsTerminal(int(o.Stdin.Fd())) {
		fd := int(o.Stdin.Fd())
		if pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && pgrp == unix.Getpgrp() {
			cmd.SysProcAttr.Foreground = true
			cmd.SysProcAttr.Ctty = fd // a descriptor of the parent for Foreground
			fg = &foreground{fd: fd, pgrp: pgrp}
		}
	}
	wait, err := startChild(cmd)
	if err != nil {
		return err
	}
	s.waitCh, s.fg = wait, fg
	return nil
}

// foreground remembers which process group owned the terminal before the child took it.
type foreground struct {
	fd   int
	pgrp int
	done bool
}

// restore makes our process group the terminal's foreground group again. We are a background
// process then, so tcsetpgrp would raise SIGTTOU: withTTOUBlocked holds it off for the call
// (tcsetpgrp(3) proceeds when the caller blocks or ignores SIGTTOU).
func (f *foreground) restore() error {
	if f.done {
		return nil
	}
	f.done = true
	return withTTOUBlocked(func() error { return unix.IoctlSetPointerInt(f.fd, unix.TIOCSPGRP, f.pgrp) })
}
