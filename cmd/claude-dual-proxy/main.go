// Command claude-dual-proxy runs Claude Code behind dual-proxy:
// `claude-dual-proxy [flags] -- [claude args...]`. See README.md.
package main

import (
	"os"

	"github.com/dual-proxy/dual-proxy/internal/app/cli"
)

func main() {
	os.Exit(cli.Claude(os.Args[1:], cli.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ()}))
}
