package registry

import (
	"errors"
	"slices"
)

// ace is one access-control entry of a Windows directory's DACL as the trust check reads it.
type ace struct {
	allow       bool   // ACCESS_ALLOWED_ACE_TYPE (else a deny or other entry, which grants nothing)
	inheritOnly bool   // INHERIT_ONLY_ACE: applies to children, not to the directory
	mask        uint32 // access mask
	sid         string // trustee, "S-1-5-…"
}

// Windows access rights that let a trustee put or replace files in a directory, or take it over.
const (
	fileAddFile       = 0x0002 // FILE_ADD_FILE
	fileAddSubdir     = 0x0004 // FILE_ADD_SUBDIRECTORY
	fileDeleteChild   = 0x0040 // FILE_DELETE_CHILD
	deleteRight       = 0x00010000
	writeDAC          = 0x00040000
	writeOwner        = 0x00080000
	genericAll        = 0x10000000
	genericWrite      = 0x40000000
	maximumAllowed    = 0x02000000
	dirWriteRights    = fileAddFile | fileAddSubdir | fileDeleteChild | deleteRight | writeDAC | writeOwner | genericAll | genericWrite | maximumAllowed
	sidSystem         = "S-1-5-18"
	sidAdministrators = "S-1-5-32-544"
)

// aclVerdict decides whether a Windows registry directory is trusted as Unix's owner and mode
// check does (SPEC PLAT-5): the owner is me (the user's SID), SYSTEM or Administrators,
// and no DACL entry lets anyone else write there (nilDACL: no DACL, which grants everyone
// everything). A pure function, tested on every OS.
func aclVerdict(owner, me string, nilDACL bool, aces []ace) error {
	trusted := []string{me, sidSystem, sidAdministrators}
	if !slices.Contains(trusted, owner) {
		return errors.New("owned by another user (" + owner + ")")
	}
	if nilDACL {
		return errors.New("no access list: everyone can write to it")
	}
	for _, a := range aces {
		if a.allow && !a.inheritOnly && a.mask&dirWriteRights != 0 && !slices.Contains(trusted, a.sid) {
			return errors.New("others can write to it (" + a.sid + ")")
		}
	}
	return nil
}
