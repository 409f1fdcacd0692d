//go:build windows

package registry

import (
	"os"

	"golang.org/x/sys/windows"
)

// alive reports whether process pid exists and has not exited.
func alive(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if windows.GetExitCodeProcess(h, &code) != nil {
		return false
	}
	return code == 259 // STILL_ACTIVE
}

// checkPrivate: %LocalAppData% is readable by its user only (profile ACL).
func checkPrivate(string) error { return nil }

// checkTrusted: see checkPrivate.
func checkTrusted(string) error { return nil }

// ownedByMe: files under %LocalAppData% are the user's (profile ACL).
func ownedByMe(os.FileInfo) bool { return true }
