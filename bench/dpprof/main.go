// Command dpprof is dual-proxy with a CPU profile: the same CLI as
// ./cmd/dual-proxy, plus, when DUAL_PROXY_CPUPROFILE names a file, a CPU
// profile written there when the proxy exits (SIGTERM or SIGINT lets it
// return normally). `go run . -cpuprofile DIR` in bench/ builds and uses it.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/dual-proxy/dual-proxy/internal/app/cli"
)

func main() {
	// Read here, in the command, not in a package (COMMON: packages never
	// read the environment).
	if path := os.Getenv("DUAL_PROXY_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dpprof:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "dpprof:", err)
			os.Exit(1)
		}
		code := cli.DualProxy(os.Args[1:], cli.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ()})
		pprof.StopCPUProfile()
		f.Close()
		os.Exit(code)
	}
	os.Exit(cli.DualProxy(os.Args[1:], cli.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Environ: os.Environ()}))
}
