package signals

import "runtime"

// The per-OS decisions of this package, as plain functions of the OS name (runtime.GOOS values)
// so that every one of them is tested on every OS. The per-OS files only carry
// them out.

// host is the OS this program was built for; the only place the package looks at it.
var host = runtime.GOOS

// forwardedSignalNames returns the names (as unix.SignalName spells them) of the signals Run
// forwards once each to the child's process group on goos. On Windows there is
// nothing to forward: the console itself delivers Ctrl-C, Ctrl-Break and close to every process
// attached to it, the child included, so forwarding would deliver them twice.
func forwardedSignalNames(goos string) []string {
	if goos == "windows" {
		return nil
	}
	return []string{"SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"}
}

// usesPTY reports whether Run starts the child on a new PTY when stdin is a terminal on goos.
// Windows has no PTY in this sense; the child shares the console. A plain function of the OS
// name, so each OS's answer is tested on every OS (SPEC PLAT-1).
func usesPTY(goos string) bool { return goos != "windows" }

// treeCleanup names how Run ends what the child leaves behind on goos:
//
//   - "subreaper": the child's process group, plus every descendant reparented to the launcher
//     as PR_SET_CHILD_SUBREAPER (Linux): daemons that called setsid included;
//   - "group+session": the child's process group, plus (PTY mode) every process still in the
//     child's session (macOS, no subreaper): a descendant that called setsid, or in plain mode
//     moved to another process group, escapes;
//   - "job": a Job object with kill-on-close holding the child from its first instruction (it
//     is created suspended and resumed once assigned) and everything it starts (Windows): only
//     a process started with CREATE_BREAKAWAY_FROM_JOB escapes, which the job allows
//     (breakaway-OK) so that a browser an agent opens for a login outlives the agent.
func treeCleanup(goos string) string {
	switch goos {
	case "linux":
		return "subreaper"
	case "windows":
		return "job"
	}
	return "group+session"
}
