// Command dual-proxy is the local forwarding proxy (`dual-proxy`), its
// launcher (`dual-proxy run -- CMD`) and the offline demo
// (`dual-proxy demo`). See README.md.
package main

import (
	"os"

	"github.com/dual-proxy/dual-proxy/internal/app/cli"
)

func main() {
	os.Exit(cli.DualProxy(os.Args[1:], cli.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ()}))
}
