package registry

import (
	"errors"

	"golang.org/x/sys/unix"
)

// procStart is process pid's creation stamp on macOS: p_starttime of sysctl kern.proc.pid.PID
// in microseconds since the epoch, which a later process reusing the pid cannot share.
func procStart(pid int) (int64, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, err
	}
	if kp.Proc.P_pid != int32(pid) {
		return 0, errors.New("no such process")
	}
	t := kp.Proc.P_starttime
	return int64(t.Sec)*1e6 + int64(t.Usec), nil
}
