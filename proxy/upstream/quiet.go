package upstream

import "syscall"

// quiet reports whether an idle connection has nothing to read: no
// buffered bytes, no unsolicited data and no EOF waiting in the socket (a
// peek that never blocks). Anything else would be read as the answer to
// the next request (response desync), so such a connection is dropped.
// The socket check is per OS (socketQuiet in quiet_unix.go,
// quiet_windows.go, quiet_other.go); a conn that is no socket is quiet
// when nothing is buffered.
func (uc *upConn) quiet() bool {
	if uc.br.Buffered() > 0 {
		return false
	}
	sc, ok := uc.conn.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	return socketQuiet(rc)
}
