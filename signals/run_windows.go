package signals

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/windows"
)

// heldConsoleEvents are the console control events Run holds while the child runs, as os/signal
// reports them on Windows: os.Interrupt for Ctrl-C and Ctrl-Break, syscall.SIGTERM for console
// close, logoff and shutdown. The console delivers each of them to every process attached to
// it, the child included; holding them keeps the launcher alive to wait for the child.
var heldConsoleEvents = []os.Signal{os.Interrupt, syscall.SIGTERM}

// runOS is Run on Windows: the child shares the console and stdio (no PTY) and
// runs in a kill-on-close Job object from its first instruction (startInJob).
func runOS(ctx context.Context, cmd *exec.Cmd, opts Options) (status int, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	sigCh := make(chan os.Signal, 16)
	signal.Notify(sigCh, heldConsoleEvents...)
	if !opts.KeepHandlers {
		defer signal.Stop(sigCh)
	}

	if cmd.Stdin == nil && opts.Stdin != nil {
		cmd.Stdin = opts.Stdin
	}
	if cmd.Stdout == nil && opts.Stdout != nil {
		cmd.Stdout = opts.Stdout
	}
	if cmd.Stderr == nil && opts.Stderr != nil {
		cmd.Stderr = opts.Stderr
	}
	j, jerr := newJob()
	if jerr != nil {
		log.Warn("no job object: the child's descendants may outlive the launcher", "err", jerr)
	}
	defer j.close()
	if err := viaCmdExe(cmd); err != nil {
		return StatusCannotExecute, err
	}
	if err := startInJob(cmd, j, log); err != nil {
		return ExitStatus(err), err
	}
	log.Debug("child started", "pid", cmd.Process.Pid, "pty", false, "cleanup", treeCleanup(host))

	waitCh := make(chan error, 1)
	go func() { waitCh <- cmd.Wait() }()
	done := ctx.Done()
	var waitErr error
	for waiting := true; waiting; {
		select {
		case waitErr = <-waitCh:
			waiting = false
		case sig := <-sigCh:
			// The child got the same event from the console; it decides. On close, logoff and
			// shutdown Windows ends the launcher a few seconds later, which closes the job.
			log.Debug("console event: the child receives it itself; waiting", "signal", sig.String())
		case <-done:
			done = nil
			log.Info("context done: ending the child's process tree", "pid", cmd.Process.Pid)
			if !j.terminate() {
				_ = cmd.Process.Kill()
			}
		}
	}
	// Whatever the child left in the job ends with it. Windows has no polite stop for a
	// process sharing our console, so there is no grace period.
	if n := j.active(); n > 0 {
		log.Info("processes left in the child's job: terminating", "count", n)
	}
	j.terminate()
	status = ExitStatus(waitErr)
	log.Debug("child done", "pid", cmd.Process.Pid, "status", status)
	return status, nil
}

// viaCmdExe makes a cmd whose program is a .cmd or .bat file safe to start: left
// to os/exec, CreateProcess runs the script under cmd.exe with the C-runtime quoting of the
// arguments, which cmd.exe re-parses (an argument "x&calc" ran calc, "100%PATH%" arrived
// expanded). An npm shim is replaced by the node.exe command it would run (every argument
// arrives exact); any other script is started as cmd.exe with a command line from
// batchCommandLine. cmd.exe is the one of the system directory, not whatever %ComSpec% or PATH
// name. A caller's own SysProcAttr.CmdLine is left alone. Errors: a *BatchArgError for an
// argument no command line can carry.
func viaCmdExe(cmd *exec.Cmd) error {
	if cmd.Err != nil || !isBatchFile(cmd.Path) || cmd.SysProcAttr != nil && cmd.SysProcAttr.CmdLine != "" {
		return nil
	}
	script := cmd.Path
	if !filepath.IsAbs(script) {
		script = filepath.Join(cmd.Dir, script)
		if abs, err := filepath.Abs(script); err == nil {
			script = abs
		}
	}
	var args []string
	if len(cmd.Args) > 1 {
		args = cmd.Args[1:]
	}
	if node, argv, ok := npmShimCommand(script, args); ok {
		cmd.Path, cmd.Args = node, argv
		return nil
	}
	line, err := batchCommandLine(script, args)
	if err != nil {
		return err
	}
	sys, err := windows.GetSystemDirectory()
	if err != nil {
		return err
	}
	cmd.Path = filepath.Join(sys, "cmd.exe")
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CmdLine = line
	return nil
}

// npmShimCommand returns the node.exe and its arguments that the npm shim script would run
// with args, as the shim picks node: node.exe beside the shim, else node.exe from PATH. ok is
// false when script is no npm shim (parseNpmShim) or no node.exe is found.
func npmShimCommand(script string, args []string) (node string, argv []string, ok bool) {
	body, err := readSmallFile(script, 64<<10)
	if err != nil {
		return "", nil, false
	}
	shim, ok := parseNpmShim(string(body))
	if !ok {
		return "", nil, false
	}
	dir := filepath.Dir(script)
	node = filepath.Join(dir, "node.exe")
	if fi, err := os.Stat(node); err != nil || !fi.Mode().IsRegular() {
		if node, err = exec.LookPath("node"); err != nil || !strings.EqualFold(filepath.Ext(node), ".exe") {
			return "", nil, false
		}
	}
	argv = append(append(append([]string{node}, shim.Args...), filepath.Join(dir, shim.Script)), args...)
	return node, argv, true
}

// readSmallFile reads path when it is at most limit bytes.
func readSmallFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = errors.New("too large for a shim")
	}
	return b, err
}
