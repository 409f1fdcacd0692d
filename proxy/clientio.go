package proxy

import (
	"io"
	"net"

	"github.com/dual-proxy/dual-proxy/internal/netutil"
)

// clientIO is what a client connection's head reader and answer writer
// read and write: the connection itself until its first plain request,
// then its netutil.RawIO, whose reads and writes do not wake the runtime's
// sysmon thread after each wait (at one request at a time that
// wake was a futex call on the request's path and 10-18 µs of CPU per
// request, rawio.go). Only plain requests switch: a CONNECT's relay
// reads and writes the socket itself, and raw I/O costs four allocations
// per connection to set up.
type clientIO struct {
	c  net.Conn
	rw io.ReadWriter // nil until plain; then set once, by serveConn
}

func (ci *clientIO) Read(p []byte) (int, error) {
	if ci.rw != nil {
		return ci.rw.Read(p)
	}
	return ci.c.Read(p)
}

func (ci *clientIO) Write(p []byte) (int, error) {
	if ci.rw != nil {
		return ci.rw.Write(p)
	}
	return ci.c.Write(p)
}

// plain switches to raw I/O; serveConn calls it before each plain
// request, before the request's client watch may read (forward_watch.go).
func (ci *clientIO) plain() {
	if ci.rw == nil {
		ci.rw = netutil.RawIO(ci.c)
	}
}
