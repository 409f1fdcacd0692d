package signals

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"time"
)

// DefaultKillAfter is the stop timeout used when Options.KillAfter is 0
// (--kill-after-ms default 5000).
const DefaultKillAfter = 5 * time.Second

// LeftoverGrace is how long processes left in the child's process group after the child exited
// get between SIGTERM and SIGKILL (Unix, Windows ends them at once).
const LeftoverGrace = time.Second

// Options configures [Run]. The zero value is usable: no stdio (exec.Cmd defaults), 5 s stop
// timeout, no logging, PTY mode off (Stdin nil is not a terminal).
type Options struct {
	// KillAfter is the stop timeout (Unix): if the child's process group is still alive
	// KillAfter after a forwarded SIGTERM or SIGHUP (or ctx cancellation), it gets SIGKILL. 0
	// means DefaultKillAfter (5 s). Windows has no polite stop to wait on and ignores it.
	KillAfter time.Duration
	// Stdin is the launcher's standard input, usually os.Stdin. When it is a terminal
	// (term.IsTerminal) and NoPTY is false, Run uses PTY mode. In plain mode it
	// becomes cmd.Stdin unless cmd.Stdin is already set.
	Stdin *os.File
	// Stdout and Stderr are the launcher's output, usually os.Stdout and os.Stderr. PTY mode
	// copies the child's terminal output to Stdout (Stderr is unused there: the PTY merges both
	// streams); plain mode hands them to the child unless cmd.Stdout / cmd.Stderr are set.
	Stdout, Stderr *os.File
	// Logger receives debug/info records about forwarded signals, stop timeouts and leftover
	// processes (never command lines or environment). It must not write to the child's
	// terminal. nil discards.
	Logger *slog.Logger
	// NoPTY forces plain inherited stdio even when Stdin is a terminal (Unix; Windows never
	// uses a PTY). On a terminal the child's
	// process group is then made the terminal's foreground group for the run (like a job-control
	// shell does), so it can read the terminal and gets typed Ctrl-C directly.
	NoPTY bool
	// NoSubreaper turns off PR_SET_CHILD_SUBREAPER (Linux only; the other systems have no
	// subreaper and ignore it). Leave it false in the launcher: without it,
	// grandchildren orphaned by the child are reparented to PID 1, which in some containers never
	// reaps them (zombies). Set it when the program runs other child processes concurrently and
	// does not want Run to be their subreaper.
	NoSubreaper bool
	// KeepHandlers leaves the signal handlers installed when Run returns: signals that arrive
	// later are caught and dropped instead of getting their default action. Set it in a program
	// that exits right after Run, as the launchers do: removing the handlers costs a round trip
	// to the runtime's signal-mask thread per signal (eleven on Unix, ≈ 0.3 ms), and
	// a Ctrl-C during the launcher's own bounded teardown (proxy shutdown, registry removal)
	// then no longer cuts that short. Leave it false where Run is called repeatedly: each call
	// leaves its channel registered.
	KeepHandlers bool
}

// Run starts cmd, forwards signals to it (or, on Windows, lets the console deliver them), waits
// for it, ends what it left behind and returns the exit status per SPEC RUN-3: the child's exit
// code; 128+N when it was killed by signal N (Unix); 127 when the command is not found; 126 when
// it cannot be executed (see [ExitStatus]). What each OS guarantees is listed in the package
// documentation.
//
// Unix (Linux, macOS): the child runs in its own process group (SPEC SIG-2). When opts.Stdin is
// a terminal (and opts.NoPTY is false) it runs in its own session on a new PTY whose window size
// follows the terminal's, and the launcher's terminal is in raw mode until Run returns (SPEC
// SIG-1); otherwise it inherits opts.Stdin/Stdout/Stderr. cmd must not have been started; its
// SysProcAttr is amended (Setpgid, or Setsid+Setctty), and in PTY mode cmd.Stdin is always the
// PTY (cmd.Stdout/cmd.Stderr too, unless set). While Run runs, SIGINT, SIGTERM, SIGHUP, SIGQUIT,
// SIGUSR1 and SIGUSR2 sent to this process are forwarded once each to the child's group
// (signals that were ignored when the program started, as under nohup, are left ignored and so
// stay ignored in the child). A SIGTERM or SIGHUP, or ctx being done, starts the stop timeout
// (opts.KillAfter); a further SIGTERM, SIGINT or ctx cancellation during it sends SIGKILL at
// once. After the child exits, processes left in its group get SIGTERM and, LeftoverGrace later,
// SIGKILL; on Linux every descendant that is reparented to us is reaped and ended too, on macOS
// what is left in the child's PTY session. On return the signal handlers are removed (default
// handling again) unless opts.KeepHandlers is set.
//
// Windows: the child shares the launcher's console and stdio (no PTY) and is put in a Job
// object that is closed with kill-on-close, so its whole process tree ends when Run returns or
// the launcher dies. Ctrl-C, Ctrl-Break and console close are delivered by the console to the
// child itself; Run holds them (the launcher does not die of them) and waits for the child. ctx
// being done terminates the job at once.
//
// err is non-nil only for launcher-side failures: the command could not be started (status 127,
// 126 or 1 as above, with the cause), or the PTY/terminal could not be set up or restored (the
// status is then still the child's, when it ran).
func Run(ctx context.Context, cmd *exec.Cmd, opts Options) (status int, err error) {
	return runOS(ctx, cmd, opts)
}
