// Command wineshim writes bcryptprimitives.dll (see package wineshim) into
// the directory given as its one argument, normally a Wine prefix's
// drive_c/windows/system32, for the CI's Wine runs (.ci/wine-tests).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dual-proxy/dual-proxy/internal/testbed/wineshim"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: wineshim SYSTEM32-DIR")
		os.Exit(2)
	}
	path := filepath.Join(os.Args[1], "bcryptprimitives.dll")
	if err := os.WriteFile(path, wineshim.BcryptPrimitives(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "wineshim:", err)
		os.Exit(1)
	}
}
