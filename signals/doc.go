// Package signals is the launcher's child-process engine: it starts
// the agent, forwards the terminal and signals to it, waits for it, cleans up after it and turns
// its fate into a shell-convention exit status.
//
// What each OS guarantees (the decisions are pure functions in platform.go, the
// mechanisms in the per-OS files: *_unix.go for Linux and macOS, *_linux.go, *_darwin.go,
// run_windows.go):
//
//	                      Linux                  macOS                    Windows
//	terminal              PTY, raw, SIGWINCH     PTY, raw, SIGWINCH       shared console, no PTY
//	signals               INT TERM HUP QUIT USR1 USR2 forwarded once      none: the console sends
//	                      to the child's group; stop timeout; 2nd stop    Ctrl-C/Break/close to the
//	                      kills                                           child; launcher holds them
//	exit status           code, 128+N, 127, 126  code, 128+N, 127, 126    child's 32-bit code, 127, 126
//	orphans               group + subreaper:     group + PTY session:     Job object, kill on close:
//	                      setsid daemons too     setsid daemons escape    all descendants, except
//	                                                                      one started with
//	                                                                      CREATE_BREAKAWAY_FROM_JOB
//	zombies               reaped (subreaper)     launchd reaps orphans    none (no zombies)
//
// Flow of one [Run] on Unix (Linux; macOS has no subreaper step):
//
//	Notify(signals) → subreaper on → start child ─┬─ PTY mode: new session + controlling PTY,
//	                                              │  our terminal raw, two copy loops, SIGWINCH → resize
//	                                              └─ plain mode: own process group, inherited stdio
//	supervise: forward signals to -pgid, stop timeout, reap orphans on SIGCHLD, until cmd.Wait returns
//	cleanup: SIGTERM leftovers in the group, SIGKILL 1 s later, reap → drain PTY output (until EIO)
//	→ resets (child died by a signal) → restore terminal → signal.Stop → return ExitStatus
//
// Design decisions:
//
//   - Stdin in PTY mode is read through poll(2) on the terminal and a cancel pipe, never with a
//     blocking read(2), and only after poll reported data. So when Run returns, no goroutine is
//     left blocked in read on the user's terminal eating keystrokes meant for the shell, and the
//     terminal's O_NONBLOCK flag (shared with the shell) is never touched. The PTY master is a
//     non-blocking duplicate in Go's poller, so closing it ends both copy loops.
//   - Orphans: PID 1 in our containers does not reap, so Run makes the process a child subreaper
//     (PR_SET_CHILD_SUBREAPER, restored on return); descendants orphaned by the child are
//     reparented to us, and every zombie child of ours that belongs to the child's process group
//     (or session, in PTY mode) is reaped with wait4 on SIGCHLD and during cleanup. Zombies of
//     other groups are left alone so other exec.Cmd values of the program keep their statuses
//     (Options.NoSubreaper turns the mechanism off). A descendant that moved to its own session
//     (a daemon) escapes the group cleanup, as with any process-group based supervisor.
//   - A launcher killed with SIGKILL cleans up nothing: on Linux the child's parent-death signal
//     (SIGKILL) ends it then. The kernel ties that signal to the thread that forked, so
//     startChild forks and waits from a goroutine locked to its thread until the child is
//     reaped (Go issue 27505). macOS has no parent-death signal.
//   - Exactly-once forwarding: the child never shares our process group, so a terminal's SIGINT
//     reaches either us (plain mode; forwarded once) or, in PTY mode, nobody: our terminal is raw
//     and a typed Ctrl-C travels as the byte 0x03 through the PTY, whose line discipline signals
//     the child's foreground group. Signals that were ignored at startup (nohup) stay ignored.
//   - Job control: typed Ctrl-Z in PTY mode is a byte for the child's PTY. A SIGTSTP sent to the
//     launcher restores the terminal (PTY mode) or is forwarded to the child's group (plain
//     mode), then the launcher stops itself with SIGSTOP; on SIGCONT raw mode and the window size
//     are re-applied (PTY mode) or SIGCONT is forwarded (plain mode).
//   - NoPTY on a terminal: the child's group becomes the terminal's foreground group for the run
//     (like a job-control shell), so it can read the terminal; typed Ctrl-C then goes to the child
//     directly (still exactly once). Known limit: a typed Ctrl-Z stops the child while the launcher
//     keeps waiting; `kill -CONT` the child's group to continue.
//   - macOS differs from Linux only where the kernel does: no subreaper (orphans go to launchd,
//     which reaps them; after the child exits, its group and, in PTY mode, its session are
//     ended), SIGTTOU is ignored instead of blocked around tcsetpgrp, termios via TIOCGETA.
//   - Windows: the child shares the console and stdio; console control events reach it from
//     the console, so the launcher only holds them and waits. A child that is a .cmd or .bat
//     file (npm's shims) is never started the way os/exec would, under cmd.exe with quoting
//     cmd.exe re-parses: an npm shim is replaced by its node.exe command, any other script
//     gets a cmd.exe command line quoted by cmd.exe's rules or is refused (batch.go,
//     npmshim.go). The child is created suspended, assigned to a kill-on-close, breakaway-OK
//     Job object, then resumed (job_windows.go); whatever is left in
//     the job when the child exits is terminated at once (there is no polite stop for a process
//     in our console).
//   - Panics: Run's own goroutine recovers, SIGKILLs the child's group, restores the terminal and
//     re-panics; the copy loops restore the terminal before re-panicking.
package signals
