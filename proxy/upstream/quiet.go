//go:build !unix

package upstream

import "syscall"

// quiet reports whether an idle connection has nothing to read: no
// buffered bytes, no unsolicited data waiting in the socket. Anything else
// would be read as the answer to the next request (response desync), so
// such a connection is dropped. The socket check is per OS (socketQuiet in
// quiet_windows.go, quiet_other.go; on Unix send's read before the write is
// the check, await_unix.go); a conn that is no socket is quiet when nothing
// is buffered. The syscall.RawConn and the peek's callback are made once
// per connection: the check runs before every reuse.
func (uc *upConn) quiet() bool {
	if uc.br.Buffered() > 0 {
		return false
	}
	if uc.rc == nil {
		sc, ok := uc.conn.(syscall.Conn)
		if !ok {
			return true
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			return false
		}
		uc.rc = rc
		uc.aw.peek.check = uc.aw.peek.peekFD
	}
	return socketQuiet(uc.rc, &uc.aw.peek)
}

// sockPeek is the state of one connection's socket peek, kept with the
// connection so that a peek allocates nothing.
type sockPeek struct {
	quiet bool
	n     [2]uint32             // Windows: FIONREAD's byte count and the length it returned
	check func(fd uintptr) bool // peekFD as a method value, made once
}
