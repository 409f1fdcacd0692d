package signals

import (
	"errors"
	"log/slog"
	"os/exec"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// jobLimits are the job's limits: kill-on-close ends every member when the
// job's last handle closes; breakaway-OK lets a member start a process with
// CREATE_BREAKAWAY_FROM_JOB outside the job, as an agent does for a browser window it opens for a
// login, which must outlive the agent. Every process started without that flag is a member.
const jobLimits = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK

// beforeAssign, when set (tests only), runs between the child's creation and its assignment to
// the job, with the child's pid.
var beforeAssign func(pid int)

// startInJob starts cmd in job j with no window in which the child runs outside it: the child is
// created suspended (CREATE_SUSPENDED), assigned to j, then resumed (NtResumeProcess), so even a
// grandchild it starts in its first instruction is a member. A nil j (no job could be made) only
// delays the resume. The child is killed when it cannot be resumed. Errors: cmd.Start's, or the
// resume's (phase "resume").
func startInJob(cmd *exec.Cmd, j *job, log *slog.Logger) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|
		windows.PROCESS_SUSPEND_RESUME|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return &resumeError{pid: pid, err: err}
	}
	defer windows.CloseHandle(p)
	if beforeAssign != nil {
		beforeAssign(pid)
	}
	if err := j.assign(p); j != nil && err != nil {
		log.Warn("child not in the job object: its descendants may outlive the launcher", "err", err)
	}
	if err := ntResumeProcess(p); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return &resumeError{pid: pid, err: err}
	}
	return nil
}

// resumeError is startInJob's error when the suspended child could not be opened or resumed.
type resumeError struct {
	pid int
	err error
}

func (e *resumeError) Error() string {
	return "resume: the suspended child (pid " + strconv.Itoa(e.pid) + ") could not be resumed: " + e.err.Error()
}

func (e *resumeError) Unwrap() error { return e.err }

var procNtResumeProcess = windows.NewLazySystemDLL("ntdll.dll").NewProc("NtResumeProcess")

// ntResumeProcess resumes every thread of process p (ntdll's NtResumeProcess, which
// x/sys/windows does not wrap; p needs PROCESS_SUSPEND_RESUME).
func ntResumeProcess(p windows.Handle) error {
	if err := procNtResumeProcess.Find(); err != nil {
		return err
	}
	r, _, _ := procNtResumeProcess.Call(uintptr(p))
	if r != 0 {
		return windows.NTStatus(r)
	}
	return nil
}

// job is a Job object with jobLimits: when its last handle closes (Run returns, or the launcher
// dies in any way), every process in it is terminated. Processes a job member creates are
// members too, except those started with CREATE_BREAKAWAY_FROM_JOB. A nil *job does nothing.
type job struct{ h windows.Handle }

// newJob creates the job; its handle is not inheritable, so the child cannot keep it open.
func newJob() (*job, error) {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: jobLimits,
		},
	}
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(h)
		return nil, err
	}
	return &job{h: h}, nil
}

// errExitedEarly is assign's error for a process that had exited already: Windows refuses to
// assign it (ERROR_ACCESS_DENIED), which says nothing about the job.
var errExitedEarly = errors.New("the process exited before it was assigned")

// stillActive is GetExitCodeProcess's code for a running process (STILL_ACTIVE).
const stillActive = 259

// assign puts process p (a handle with PROCESS_SET_QUOTA, PROCESS_TERMINATE and
// PROCESS_QUERY_LIMITED_INFORMATION) into the job; errExitedEarly when it has exited already.
func (j *job) assign(p windows.Handle) error {
	if j == nil {
		return windows.ERROR_INVALID_HANDLE
	}
	err := windows.AssignProcessToJobObject(j.h, p)
	var code uint32
	if err != nil && windows.GetExitCodeProcess(p, &code) == nil && code != stillActive {
		return errExitedEarly
	}
	return err
}

// active returns the number of processes in the job (0 when unknown).
func (j *job) active() int {
	if j == nil {
		return 0
	}
	var info jobAccounting
	if err := windows.QueryInformationJobObject(j.h, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		return 0
	}
	return int(info.ActiveProcesses)
}

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION (winnt.h), which x/sys/windows lacks.
type jobAccounting struct {
	TotalUserTime, TotalKernelTime                       int64
	ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime   int64
	TotalPageFaultCount, TotalProcesses, ActiveProcesses uint32
	TotalTerminatedProcesses                             uint32
}

// terminate ends every process in the job with exit code 1 (as os.Process.Kill does) and
// reports whether it could.
func (j *job) terminate() bool {
	return j != nil && windows.TerminateJobObject(j.h, 1) == nil
}

// close closes the job's handle, which terminates what is still in it (kill-on-close).
func (j *job) close() {
	if j != nil {
		_ = windows.CloseHandle(j.h)
	}
}
