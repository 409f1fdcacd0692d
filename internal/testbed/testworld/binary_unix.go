//go:build unix

package testworld

import (
	"os"
	"syscall"
)

// stopInstance asks a dual-proxy to stop as a service manager does: SIGTERM
// (it stops accepting, lets in-flight work finish and exits 0).
func stopInstance(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
