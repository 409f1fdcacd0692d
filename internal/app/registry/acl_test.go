package registry

import "testing"

func TestACLVerdict(t *testing.T) {
	const me, other = "S-1-5-21-1-2-3-1001", "S-1-5-21-1-2-3-1002"
	const everyone, users = "S-1-1-0", "S-1-5-32-545"
	for _, tc := range []struct {
		name    string
		owner   string
		nilDACL bool
		aces    []ace
		trusted bool
	}{
		{"own-dir-profile-acl", me, false, []ace{{true, false, 0x1f01ff, me}, {true, false, 0x1f01ff, sidSystem}, {true, false, 0x1f01ff, sidAdministrators}}, true},
		{"admin-owned-elevated-shell", sidAdministrators, false, []ace{{true, false, 0x1f01ff, me}}, true},
		{"another-users-dir", other, false, []ace{{true, false, 0x1f01ff, me}}, false},
		{"everyone-may-add-files", me, false, []ace{{true, false, 0x1f01ff, me}, {true, false, fileAddFile, everyone}}, false},
		{"users-generic-write", me, false, []ace{{true, false, genericWrite, users}}, false},
		{"others-read-only", me, false, []ace{{true, false, 0x1f01ff, me}, {true, false, 0x1200a9, users}}, true},
		{"inherit-only-entry-ignored", me, false, []ace{{true, true, genericAll, "S-1-3-0"}}, true},
		{"deny-entry-grants-nothing", me, false, []ace{{false, false, genericAll, everyone}}, true},
		{"no-dacl-is-open-to-all", me, true, nil, false},
	} {
		t.Run("PLAT-5/OPS-6/windows-acl-"+tc.name, func(t *testing.T) {
			err := aclVerdict(tc.owner, me, tc.nilDACL, tc.aces)
			if (err == nil) != tc.trusted {
				t.Fatalf("aclVerdict: %v, want trusted=%v", err, tc.trusted)
			}
		})
	}
}
