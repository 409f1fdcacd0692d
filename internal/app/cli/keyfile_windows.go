//go:build windows

package cli

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/windows"
)

// readableByOthers tells how users other than the owner can read the file
// at path, and the command that stops it; "" when they cannot, or when the
// file's access list cannot be read. On Windows the access list decides:
// an entry that lets Everyone, Users or Authenticated Users read the file
// (aclReaders). Go's file mode shows none of it.
func readableByOthers(path string) (how, fix string) {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return "", ""
	}
	dacl, _, err := sd.DACL()
	if err != nil && !errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND) {
		return "", ""
	}
	var aces []fileACE
	if dacl != nil {
		for i := uint32(0); i < uint32(dacl.AceCount); i++ {
			var a *windows.ACCESS_ALLOWED_ACE
			if err := windows.GetAce(dacl, i, &a); err != nil {
				return "", ""
			}
			// The allowed and denied entries share this layout; other
			// types (object, callback, audit) grant nothing here.
			t := a.Header.AceType
			if t != windows.ACCESS_ALLOWED_ACE_TYPE && t != windows.ACCESS_DENIED_ACE_TYPE {
				continue
			}
			sid := (*windows.SID)(unsafe.Pointer(&a.SidStart))
			aces = append(aces, fileACE{
				allow:       t == windows.ACCESS_ALLOWED_ACE_TYPE,
				inheritOnly: a.Header.AceFlags&windows.INHERIT_ONLY_ACE != 0,
				mask:        uint32(a.Mask),
				sid:         sid.String(),
			})
		}
	}
	readers := aclReaders(dacl == nil, aces)
	if len(readers) == 0 {
		return "", ""
	}
	return "its access list lets " + joinAnd(readers) + " read it",
		`icacls "` + path + `" /inheritance:r /grant:r "%USERNAME%:F"`
}
