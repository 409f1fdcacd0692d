//go:build !windows

package cli

import (
	"fmt"
	"os"
	"runtime"
)

// readableByOthers tells how users other than the owner can read the file
// at path ("mode 0644"), and the command that stops it; "" when they
// cannot (othersRead) or the file cannot be read.
func readableByOthers(path string) (how, fix string) {
	fi, err := os.Stat(path)
	if err != nil || !othersRead(runtime.GOOS, fi.Mode()) {
		return "", ""
	}
	return fmt.Sprintf("mode %04o", fi.Mode().Perm()), "chmod 600 " + path
}
