package registry

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/windows"
)

func TestRegistryDirACL(t *testing.T) {
	t.Run("PLAT-5/OPS-6/list-refuses-a-dir-everyone-can-write", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "reg")
		if _, err := Register(dir, Entry{Program: "dual-proxy", Addr: "127.0.0.1:9"}, "tok"); err != nil {
			t.Fatal(err)
		}
		if es, err := List(dir); err != nil || len(es) != 1 {
			t.Fatalf("own directory: %+v %v", es, err)
		}
		everyone, err := windows.CreateWellKnownSid(windows.WinWorldSid)
		if err != nil {
			t.Fatal(err)
		}
		acl, err := windows.ACLFromEntries([]windows.EXPLICIT_ACCESS{{
			AccessPermissions: windows.GENERIC_ALL,
			AccessMode:        windows.GRANT_ACCESS,
			Inheritance:       windows.NO_INHERITANCE,
			Trustee: windows.TRUSTEE{
				TrusteeForm:  windows.TRUSTEE_IS_SID,
				TrusteeType:  windows.TRUSTEE_IS_WELL_KNOWN_GROUP,
				TrusteeValue: windows.TrusteeValueFromSID(everyone),
			},
		}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION, nil, nil, acl, nil); err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if es, err := List(dir); err == nil || len(es) != 0 {
			t.Fatalf("listed %+v (err %v) from a directory everyone can write to", es, err)
		}
		if _, err := Register(dir, Entry{Program: "dual-proxy", Addr: "127.0.0.1:9"}, "tok2"); err == nil {
			t.Fatal("registered a token into a directory everyone can write to")
		}
	})
}
