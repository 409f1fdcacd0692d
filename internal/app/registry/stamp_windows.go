package registry

import "golang.org/x/sys/windows"

// procStart is process pid's creation stamp on Windows: its creation time from GetProcessTimes
// (100 ns units since 1601), which a later process reusing the pid cannot share. A process
// that has exited but is still held open by someone is not running: an error.
func procStart(pid int) (int64, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return 0, err
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return 0, err
	}
	if code != 259 { // STILL_ACTIVE
		return 0, windows.ERROR_INVALID_PARAMETER
	}
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0, err
	}
	return int64(created.HighDateTime)<<32 | int64(created.LowDateTime), nil
}
