//go:build !unix && !windows

package upstream

import "syscall"

// socketQuiet is true: without a socket peek (js, wasip1, plan9)
// unsolicited bytes still in the kernel are not seen, only buffered ones
// (see quiet).
func socketQuiet(syscall.RawConn, *sockPeek) bool { return true }

// peekFD is unused without a socket peek.
func (p *sockPeek) peekFD(uintptr) bool { return true }
