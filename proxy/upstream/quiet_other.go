//go:build !unix && !windows

package upstream

// quiet reports whether an idle connection has nothing buffered. Without
// a socket peek (js, wasip1, plan9) unsolicited bytes still in the kernel
// are not seen; see quiet_unix.go.
func (uc *upConn) quiet() bool { return uc.br.Buffered() == 0 }
