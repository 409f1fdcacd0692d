package signals

import (
	"os/exec"
	"runtime"
	"syscall"
)

// startChild starts cmd and waits for it in the background; the returned channel gets
// cmd.Wait's error once. On Linux the child gets SIGKILL as its parent-death signal
// (PR_SET_PDEATHSIG, SysProcAttr.Pdeathsig), so it dies with a launcher killed in any way,
// SIGKILL included: no orphan survives the launcher.
//
// The kernel sends the parent-death signal when the thread that forked the child exits, not
// the process (prctl(2); Go issue 27505), and the Go runtime ends threads, for example one
// whose goroutine exits while locked with runtime.LockOSThread. So the child is started, and
// waited for, from a goroutine that locks its thread and never unlocks it: the thread lives
// until the child has been reaped, then exits with the goroutine.
func startChild(cmd *exec.Cmd) (<-chan error, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	started := make(chan error, 1)
	wait := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread must outlive the child
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		wait <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return wait, nil
}
