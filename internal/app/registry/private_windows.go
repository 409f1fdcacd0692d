//go:build windows

package registry

import (
	"errors"
	"os"
	"unsafe"

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

// checkPrivate refuses a directory that is a symlink (a reparse point), owned by another user
// or writable by others (aclVerdict), as Unix checks owner and mode.
func checkPrivate(dir string) error { return checkTrusted(dir) }

// checkTrusted refuses to read entries from dir unless no one else could have written them:
// a real directory whose owner is this user (or SYSTEM, Administrators) and whose DACL lets no
// one else write (aclVerdict).
func checkTrusted(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 {
		return errors.New("not a directory (a symlink?)")
	}
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return err
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return err
	}
	me, err := currentUserSID()
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil && !errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND) {
		return err
	}
	var aces []ace
	if dacl != nil {
		for i := uint32(0); i < uint32(dacl.AceCount); i++ {
			var a *windows.ACCESS_ALLOWED_ACE
			if err := windows.GetAce(dacl, i, &a); err != nil {
				return err
			}
			sid := (*windows.SID)(unsafe.Pointer(&a.SidStart))
			aces = append(aces, ace{
				allow:       a.Header.AceType == windows.ACCESS_ALLOWED_ACE_TYPE,
				inheritOnly: a.Header.AceFlags&windows.INHERIT_ONLY_ACE != 0,
				mask:        uint32(a.Mask),
				sid:         sid.String(),
			})
		}
	}
	return aclVerdict(owner.String(), me, dacl == nil, aces)
}

// currentUserSID is this process's user SID, "S-1-5-21-…".
func currentUserSID() (string, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", err
	}
	return u.User.Sid.String(), nil
}

// ownedByMe: files under %LocalAppData% are the user's (profile ACL).
func ownedByMe(os.FileInfo) bool { return true }
