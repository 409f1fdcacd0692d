package editor_test

import (
	"fmt"
	"os"
)

// osPerm is the permission the OS reports for a file made with perm m: on
// Windows only the read-only attribute exists, which Go shows as 0444, else
// 0666.
func osPerm(m os.FileMode) os.FileMode {
	if m&0o200 == 0 {
		return 0o444
	}
	return 0o666
}

// permString is the editor's "mode" field for a file made with perm m.
func permString(m os.FileMode) string { return fmt.Sprintf("%04o", osPerm(m)) }
