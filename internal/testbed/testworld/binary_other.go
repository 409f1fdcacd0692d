//go:build !unix

package testworld

import "os"

// stopInstance ends a dual-proxy where there is no SIGTERM to send another
// process (Windows). dual-proxy stops gracefully on the console's
// Ctrl-C/Ctrl-Break, which a test could send with GenerateConsoleCtrlEvent,
// but Wine 8.0 fails that call ("Invalid access" without a console, "Invalid
// handle" with one), so the process is terminated (TerminateProcess, exit
// status 1).
func stopInstance(p *os.Process) error { return p.Kill() }
