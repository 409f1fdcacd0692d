//go:build !unix && !windows

package upstream

import "syscall"

// socketQuiet is true: without a socket peek (js, wasip1, plan9)
// unsolicited bytes still in the kernel are not seen, only buffered ones
// (see quiet).
func socketQuiet(syscall.RawConn) bool { return true }
