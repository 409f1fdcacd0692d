//go:build linux || darwin

package signals

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// drainTimeout bounds how long Run waits for the PTY output to end (EIO) after the child's
// process group is gone. Only a descendant that left the group (setsid) and still holds the PTY
// open can make it expire; its later output is dropped.
const drainTimeout = 2 * time.Second

// terminalResets is written to the launcher's terminal after a child died by a signal, since it
// had no chance to undo its own terminal modes. Each one is a no-op when the mode
// is already off (xterm ctlseqs; kitty keyboard protocol).
const terminalResets = "" +
	"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\x1b[?1006l\x1b[?1015l" + // mouse tracking and its encodings
	"\x1b[?1004l" + // focus events
	"\x1b[?1049l" + // alternate screen (restores the main screen and cursor)
	"\x1b[?2004l" + // bracketed paste
	"\x1b[<u" + // kitty keyboard protocol: pop the pushed flags
	"\x1b[>4;0m" + // xterm modifyOtherKeys off
	"\x1b[0m" + // character attributes
	"\x1b[?25h" // cursor visible

// ptySession is PTY mode: the child on a new PTY, the launcher's terminal raw, two
// copy loops.
//
// Stdin is never read with a blocking read: copyInput polls (poll(2)) the terminal together
// with a cancel pipe and reads only what poll reported ready, so when Run returns no goroutine
// is left inside read(2) on the terminal, swallowing the next bytes the user types to the
// shell. The terminal's file status flags (O_NONBLOCK) are not touched, because they are shared
// with the shell that started us. The PTY master is switched to non-blocking and used through
// Go's poller, so closing it unblocks both loops.
type ptySession struct {
	inFd   int       // the launcher's terminal (opts.Stdin)
	out    io.Writer // opts.Stdout (io.Discard when nil)
	master *os.File  // PTY master, non-blocking, in the poller

	mu     sync.Mutex // guards saved/raw/closed and writes of terminal modes
	saved  *term.State
	raw    bool
	closed bool

	cancelR, cancelW int // pipe that stops copyInput
	outDone          chan struct{}
	wg               sync.WaitGroup
}

// startPTY opens a PTY sized like the terminal in, copies the terminal's settings to it, puts in
// into raw mode and starts cmd as session leader with the PTY as controlling terminal.
// Each step's failure undoes exactly the steps before it (fds, terminal mode): the undoing
// defers stay here, the steps with nothing to undo are pollableMaster and ptyChild.
func startPTY(cmd *exec.Cmd, in, out *os.File) (_ *ptySession, wait <-chan error, err error) {
	m, tty, err := pty.Open()
	if err != nil {
		return nil, nil, err
	}
	defer tty.Close() // the child has its own copies; ours would hold off EIO forever
	s := &ptySession{inFd: int(in.Fd()), out: io.Discard, outDone: make(chan struct{})}
	if out != nil {
		s.out = out
	}
	if s.master, err = pollableMaster(m); err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			s.master.Close()
		}
	}()

	// The child's terminal starts with the user's settings (erase, intr, iutf8 …).
	if t, err := unix.IoctlGetTermios(s.inFd, ioctlGetTermios); err == nil {
		_ = unix.IoctlSetTermios(int(tty.Fd()), ioctlSetTermios, t)
	}
	s.resize()

	var p [2]int
	if err := pipeCloexec(&p); err != nil {
		return nil, nil, err
	}
	s.cancelR, s.cancelW = p[0], p[1]
	defer func() {
		if err != nil {
			unix.Close(s.cancelR)
			unix.Close(s.cancelW)
		}
	}()

	// Raw before Start, so that keys typed while the child starts are not echoed by our side.
	if s.saved, err = term.MakeRaw(s.inFd); err != nil {
		return nil, nil, err
	}
	s.raw = true
	defer func() {
		if err != nil {
			_ = term.Restore(s.inFd, s.saved)
		}
	}()

	ptyChild(cmd, tty)
	if wait, err = startChild(cmd); err != nil {
		return nil, nil, err
	}

	s.wg.Add(2)
	go s.copyOutput()
	go s.copyInput()
	return s, wait, nil
}

// pollableMaster returns a non-blocking, close-on-exec duplicate of the PTY master m that Go's
// poller can interrupt (pty.Open's master was put in blocking mode by its Fd() calls), and
// closes m. Where the kernel refuses to poll it, the duplicate does blocking I/O instead.
func pollableMaster(m *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(m.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	m.Close()
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	master := os.NewFile(uintptr(fd), "/dev/ptmx")
	if master.SetReadDeadline(time.Time{}) != nil {
		// Not in the poller (the kernel refused to watch it): blocking I/O then, since
		// non-blocking reads outside the poller fail with EAGAIN. Linux's epoll always takes a
		// PTY master; this is a guard for kqueue on macOS.
		_ = unix.SetNonblock(fd, false)
	}
	return master, nil
}

// ptyChild makes tty cmd's stdin, and its stdout and stderr unless the caller set them, and
// makes cmd a session leader whose controlling terminal is tty (its stdin), in no process group
// of ours and not in the foreground of our terminal.
func ptyChild(cmd *exec.Cmd, tty *os.File) {
	cmd.Stdin = tty
	if cmd.Stdout == nil {
		cmd.Stdout = tty
	}
	if cmd.Stderr == nil {
		cmd.Stderr = tty
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0 // the child's stdin
	cmd.SysProcAttr.Setpgid = false
	cmd.SysProcAttr.Foreground = false
}

// copyOutput copies PTY output to the terminal until the PTY reports end of output: EIO once
// every holder of the PTY's terminal side closed it (pty(7)), or the master was closed.
func (s *ptySession) copyOutput() {
	defer s.wg.Done()
	defer close(s.outDone)
	defer s.guard()
	buf := make([]byte, 32*1024)
	out := s.out
	for {
		n, err := s.master.Read(buf)
		if n > 0 {
			if _, werr := out.Write(buf[:n]); werr != nil {
				out = io.Discard // keep draining so the child never blocks on a full PTY
			}
		}
		if err != nil {
			return
		}
	}
}

// copyInput copies the terminal to the PTY (typed Ctrl-C travels as the byte 0x03; the child's
// line discipline raises its SIGINT) until the cancel pipe becomes readable or the terminal
// reports end of file or an error. waitInput (poll(2) on Linux, select(2) on macOS, whose
// poll does not support terminals) says when the terminal has bytes.
func (s *ptySession) copyInput() {
	defer s.wg.Done()
	defer s.guard()
	buf := make([]byte, 32*1024)
	for {
		ready, stop := waitInput(s.inFd, s.cancelR)
		if stop {
			return
		}
		if !ready {
			continue
		}
		n, err := unix.Read(s.inFd, buf)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil || n <= 0 {
			return // terminal hung up
		}
		if _, err := s.master.Write(buf[:n]); err != nil {
			return
		}
	}
}

// guard restores the terminal if a copy loop panics, then lets the panic crash the program.
func (s *ptySession) guard() {
	if r := recover(); r != nil {
		s.cooked()
		panic(r)
	}
}

// resize applies the terminal's window size to the PTY; the kernel then sends SIGWINCH to the
// child's foreground process group (tty_ioctl(4) TIOCSWINSZ).
func (s *ptySession) resize() {
	ws, err := unix.IoctlGetWinsize(s.inFd, unix.TIOCGWINSZ)
	if err != nil {
		return
	}
	if rc, err := s.master.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws) })
	}
}

// cooked restores the terminal's settings from before Run (used on SIGTSTP and on panics).
func (s *ptySession) cooked() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.raw {
		_ = term.Restore(s.inFd, s.saved)
		s.raw = false
	}
}

// rawAgain re-applies raw mode after SIGCONT (the shell resets the terminal while we are stopped).
func (s *ptySession) rawAgain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if _, err := term.MakeRaw(s.inFd); err == nil {
		s.raw = true
	}
}

// close drains the PTY output (bounded by drainTimeout), stops both loops, writes the
// terminalResets when the child died by a signal, and restores the terminal's settings. Safe to
// call more than once; the later calls only restore the settings.
func (s *ptySession) close(childSignaled bool) error {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	s.mu.Unlock()
	if first {
		t := time.NewTimer(drainTimeout)
		select {
		case <-s.outDone:
		case <-t.C:
		}
		t.Stop()
		_, _ = unix.Write(s.cancelW, []byte{0})
		s.master.Close() // unblocks a Read or a Write blocked on a full PTY
		s.wg.Wait()
		unix.Close(s.cancelR)
		unix.Close(s.cancelW)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if childSignaled && first {
		_, _ = io.WriteString(s.out, terminalResets)
	}
	if !s.raw {
		return nil
	}
	s.raw = false
	return term.Restore(s.inFd, s.saved)
}
