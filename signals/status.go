package signals

import (
	"errors"
	"io/fs"
	"os/exec"
	"syscall"
)

// Shell-convention exit statuses returned by [ExitStatus] and [Run] (POSIX
// "Shell Command Language" §2.8.2, as bash and dash use them).
const (
	// StatusNotFound (127) is returned when the command cannot be found.
	StatusNotFound = 127
	// StatusCannotExecute (126) is returned when the command was found but could not be executed
	// (permission denied, not an executable format, a directory).
	StatusCannotExecute = 126
	// StatusSignalBase (128) plus N is the status of a child killed by signal N.
	StatusSignalBase = 128
	// StatusLauncherFailure (1) is returned for a launcher-side failure that prevented the child
	// from starting for another reason (for example, no PTY could be allocated).
	StatusLauncherFailure = 1
)

// ExitStatus maps the error returned by exec.Cmd.Start or exec.Cmd.Wait (or nil) to a shell-convention
// exit status:
//
//   - nil → 0;
//   - *exec.ExitError of a child that exited → its exit code (0…255 on Unix; on Windows the
//     full 32-bit code, e.g. 0xC000013A after Ctrl-C, which os.Exit passes on unchanged);
//   - *exec.ExitError of a child killed by signal N → 128+N (SIGTERM → 143, SIGKILL → 137);
//   - exec.ErrNotFound, or ENOENT from execve, or any fs.ErrNotExist (Windows: a path with
//     no file under any PATHEXT extension, CreateProcess's ERROR_FILE_NOT_FOUND) → 127;
//   - any other execve failure: EACCES/EPERM (permission denied, a directory), ENOEXEC
//     (exec format error), exec.ErrDot and the rest → 126;
//   - any other error → 1.
func ExitStatus(err error) int {
	if err == nil {
		return 0
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		ws, ok := exitErr.Sys().(syscall.WaitStatus)
		signaled := ok && ws.Signaled()
		sig := 0
		if signaled {
			sig = int(ws.Signal())
		}
		return finishedStatus(exitErr.ExitCode(), signaled, sig)
	}
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, syscall.ENOENT), errors.Is(err, fs.ErrNotExist):
		return StatusNotFound
	case errors.Is(err, exec.ErrDot), errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOEXEC),
		errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR):
		return StatusCannotExecute
	}
	var pathErr *fs.PathError
	var execErr *exec.Error
	if errors.As(err, &pathErr) || errors.As(err, &execErr) {
		// Start's errors come as *fs.PathError ("fork/exec PATH: …") or *exec.Error (lookup):
		// the command exists in some form but cannot be run.
		return StatusCannotExecute
	}
	return StatusLauncherFailure
}

// finishedStatus maps how a child ended to the launcher's status: killed
// by signal sig → 128+sig (Unix; a Windows child never ends by a signal); else its exit code as
// the OS reports it: 0…255 on Unix, the full 32-bit code on Windows (0xC000013A after Ctrl-C),
// which os.Exit hands to ExitProcess unchanged; an unknown code (negative) → 1.
func finishedStatus(code int, signaled bool, sig int) int {
	if signaled {
		return StatusSignalBase + sig
	}
	if code >= 0 {
		return code
	}
	return StatusLauncherFailure
}
