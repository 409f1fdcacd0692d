//go:build linux || darwin

package signals

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// forwardedSignals are forwarded to the child's process group exactly once each.
var forwardedSignals = signalsNamed(forwardedSignalNames(host))

// signalsNamed returns the signals with the given unix.SignalName names.
func signalsNamed(names []string) []os.Signal {
	out := make([]os.Signal, 0, len(names))
	for _, n := range names {
		out = append(out, unix.SignalNum(n))
	}
	return out
}

// controlSignals are handled by Run itself: window size, job control, reaping, and SIGPIPE (so a
// closed stdout turns into write errors instead of killing the launcher with a raw terminal).
var controlSignals = []os.Signal{
	syscall.SIGWINCH, syscall.SIGTSTP, syscall.SIGCONT, syscall.SIGCHLD, syscall.SIGPIPE,
}

// runOS is Run on Unix.
func runOS(ctx context.Context, cmd *exec.Cmd, opts Options) (int, error) {
	return run(ctx, cmd, opts, unix.Kill)
}

// killFunc is kill(2); tests wrap it to count what was sent.
type killFunc func(pid int, sig unix.Signal) error

func run(ctx context.Context, cmd *exec.Cmd, opts Options, kill killFunc) (status int, err error) {
	if opts.KillAfter <= 0 {
		opts.KillAfter = DefaultKillAfter
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &supervisor{opts: opts, log: log, kill: kill, cmd: cmd, sigCh: make(chan os.Signal, 64)}

	var watched []os.Signal
	for _, sig := range append(append([]os.Signal{}, forwardedSignals...), controlSignals...) {
		if sig != syscall.SIGCHLD && sig != syscall.SIGWINCH && signal.Ignored(sig) {
			continue // nohup and friends: keep ignoring, the child inherits SIG_IGN
		}
		watched = append(watched, sig)
	}
	// Before Start: a signal arriving during startup is queued and forwarded, not fatal.
	signal.Notify(s.sigCh, watched...)
	if !opts.KeepHandlers {
		defer signal.Stop(s.sigCh)
	}

	if !opts.NoSubreaper {
		restore, ok := subreaper()
		s.subreaper = ok
		defer restore()
	}

	known := ourChildren() // children that exist before ours: never treated as orphans
	usePTY := usesPTY(host) && !opts.NoPTY && opts.Stdin != nil && term.IsTerminal(int(opts.Stdin.Fd())) && inForeground(opts.Stdin)
	if usePTY {
		s.pty, s.waitCh, err = startPTY(cmd, opts.Stdin, opts.Stdout)
	} else {
		err = s.startPlain()
	}
	if err != nil {
		return ExitStatus(err), err
	}
	s.pgid = cmd.Process.Pid
	// From here on the terminal is raw (PTY mode) or handed to the child (foreground plain
	// mode): put it back on every path, including a panic in this goroutine.
	defer func() {
		if r := recover(); r != nil {
			if !s.reaped {
				_ = s.kill(-s.pgid, unix.SIGKILL) // no orphan survives a crashing launcher
			}
			_ = s.restoreTerminal(true)
			panic(r)
		}
	}()
	log.Debug("child started", "pid", s.pgid, "pty", usePTY, "subreaper", s.subreaper)

	waitErr := s.supervise(ctx)
	s.reaped = true
	s.cleanupGroup()
	s.cleanupEscaped(known, cmd.Process.Pid)
	status = ExitStatus(waitErr)
	var ws syscall.WaitStatus
	if cmd.ProcessState != nil {
		ws, _ = cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	if rerr := s.restoreTerminal(ws.Signaled()); rerr != nil {
		err = rerr
	}
	log.Debug("child done", "pid", s.pgid, "status", status, "cleanup", treeCleanup(host))
	return status, err
}

// supervisor is the state of one Run: the child's group, the stop timeout and the terminal.
type supervisor struct {
	opts      Options
	log       *slog.Logger
	kill      killFunc
	cmd       *exec.Cmd
	sigCh     chan os.Signal
	waitCh    <-chan error // cmd.Wait's error, once (startChild)
	pgid      int          // the child's process group (== its pid)
	subreaper bool         // PR_SET_CHILD_SUBREAPER is in effect
	reaped    bool         // cmd.Wait returned
	pty       *ptySession  // nil in plain mode
	fg        *foreground  // non-nil when plain mode gave the terminal to the child

	stopPending bool
	killTimer   *time.Timer
	killC       <-chan time.Time // killTimer.C until it fired
}

// supervise forwards signals until the child exits and returns cmd.Wait's error.
func (s *supervisor) supervise(ctx context.Context) error {
	defer func() {
		if s.killTimer != nil {
			s.killTimer.Stop()
		}
	}()
	done := ctx.Done()
	for {
		select {
		case err := <-s.waitCh:
			return err
		case sig := <-s.sigCh:
			s.handle(sig.(syscall.Signal))
		case <-done:
			done = nil
			s.log.Info("context done: stopping child", "pgid", s.pgid)
			s.stop(unix.SIGTERM)
		case <-s.killC:
			s.killC = nil
			s.log.Info("stop timeout: killing child's process group", "pgid", s.pgid, "after", s.opts.KillAfter)
			s.signalGroup(unix.SIGKILL)
		}
	}
}

// handle reacts to one signal received by the launcher while the child runs.
func (s *supervisor) handle(sig syscall.Signal) {
	switch sig {
	case unix.SIGTERM, unix.SIGHUP, unix.SIGINT:
		s.stop(sig)
	case unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2:
		s.signalGroup(sig)
	case unix.SIGCHLD:
		if s.subreaper {
			reapDescendants(s.pgid, s.pgid, s.pty != nil)
		}
	case unix.SIGWINCH:
		switch {
		case s.pty != nil:
			s.pty.resize()
		case s.fg == nil:
			// The child's background group gets no SIGWINCH from the terminal.
			s.signalGroup(sig)
		}
	case unix.SIGTSTP:
		s.suspend()
	case unix.SIGCONT:
		s.resume()
	case unix.SIGPIPE:
		// Ignored: writes to a closed stdout fail with EPIPE instead.
	}
}

// stop forwards a SIGTERM, SIGHUP or SIGINT and runs the stop timeout: SIGTERM/SIGHUP start
// it; a SIGTERM or SIGINT while it runs kills the group at once (like `docker stop`).
func (s *supervisor) stop(sig syscall.Signal) {
	if s.stopPending && (sig == unix.SIGTERM || sig == unix.SIGINT) {
		s.log.Info("second stop signal: killing child's process group", "signal", sig.String(), "pgid", s.pgid)
		s.signalGroup(unix.SIGKILL)
		return
	}
	s.signalGroup(sig)
	if !s.stopPending && (sig == unix.SIGTERM || sig == unix.SIGHUP) {
		s.stopPending = true
		s.killTimer = time.NewTimer(s.opts.KillAfter)
		s.killC = s.killTimer.C
	}
}

// signalGroup sends sig to the child's process group.
func (s *supervisor) signalGroup(sig syscall.Signal) {
	if s.pgid <= 0 {
		return // kill(0) or kill(1) would hit our own group or every process
	}
	err := s.kill(-s.pgid, sig)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		s.log.Warn("signal to child's process group failed", "signal", sig.String(), "pgid", s.pgid, "err", err)
		return
	}
	s.log.Debug("signal forwarded", "signal", sig.String(), "pgid", s.pgid)
}

// cleanupGroup runs after the child was reaped: SIGTERM to what is left in its group, SIGKILL
// LeftoverGrace later, reaping of reparented descendants throughout; it gives up LeftoverGrace
// after the SIGKILL. Signals received meanwhile are not forwarded; a SIGTERM or SIGINT skips the
// grace period.
func (s *supervisor) cleanupGroup() {
	reap := func() {
		if s.subreaper {
			reapDescendants(s.pgid, 0, s.pty != nil)
		}
	}
	reap()
	if !groupAlive(s.pgid) {
		return
	}
	s.log.Info("processes left in child's process group: terminating", "pgid", s.pgid)
	s.signalGroup(unix.SIGTERM)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	phase := time.NewTimer(LeftoverGrace) // grace, then the wait after SIGKILL
	defer phase.Stop()
	killed := false
	killNow := func() {
		if !killed {
			killed = true
			s.log.Info("processes left in child's process group: killing", "pgid", s.pgid)
			s.signalGroup(unix.SIGKILL)
			phase.Reset(LeftoverGrace)
		}
	}
	for {
		select {
		case <-tick.C:
		case sig := <-s.sigCh:
			if sig == unix.SIGTERM || sig == unix.SIGINT {
				killNow()
			}
		case <-phase.C:
			if killed {
				reap()
				if groupAlive(s.pgid) {
					s.log.Warn("processes left in child's process group did not go away", "pgid", s.pgid)
				}
				return
			}
			killNow()
		}
		reap()
		if !groupAlive(s.pgid) {
			return
		}
	}
}

// suspend handles SIGTSTP sent to the launcher (typed Ctrl-Z reaches the child through the PTY
// as a byte and never comes here in PTY mode): the terminal is restored (PTY mode) or the
// SIGTSTP is forwarded to the child's group (plain mode), then the launcher stops itself with
// SIGSTOP. resume undoes it on SIGCONT.
func (s *supervisor) suspend() {
	if s.pty != nil {
		s.pty.cooked()
	} else {
		s.signalGroup(unix.SIGTSTP)
	}
	s.log.Debug("suspending on SIGTSTP")
	_ = unix.Kill(os.Getpid(), unix.SIGSTOP)
}

// resume handles SIGCONT: re-apply raw mode and the window size (PTY mode; the shell may have
// changed both while we were stopped) or continue the child's group (plain mode).
func (s *supervisor) resume() {
	if s.pty != nil {
		s.pty.rawAgain()
		s.pty.resize()
		return
	}
	s.signalGroup(unix.SIGCONT)
}

// restoreTerminal undoes what the mode did to the launcher's terminal. Safe to call twice.
func (s *supervisor) restoreTerminal(childSignaled bool) error {
	switch {
	case s.pty != nil:
		return s.pty.close(childSignaled)
	case s.fg != nil:
		return s.fg.restore()
	}
	return nil
}

// inForeground reports whether our process group owns the terminal f. A
// launcher started in the background of an interactive shell (`cmd &`)
// must not take the terminal to raw mode: the kernel would stop it with
// SIGTTOU; it runs the child in plain mode instead.
func inForeground(f *os.File) bool {
	pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}
