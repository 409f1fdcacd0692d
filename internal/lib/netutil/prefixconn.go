// Package netutil holds the small connection helpers the proxy, the pool,
// the benchmarks and the test world share: the one connection type that
// replays bytes a buffered reader already took (PrefixConn), raw reads and
// writes that skip the runtime's system-call bookkeeping (RawIO), and
// error tests for a closed connection. It imports only the standard
// library.
package netutil

import (
	"errors"
	"io"
	"net"
)

// PrefixConn is a net.Conn whose Read first returns Prefix (bytes already
// read from Conn by a buffered reader: a gateway's bytes after its CONNECT
// answer; a request head handed to net/http), then reads Conn: bytes a
// buffered reader took must not be lost. It is not safe for concurrent
// Reads (net.Conn allows that; nothing here needs it).
type PrefixConn struct {
	net.Conn
	Prefix []byte
}

// Read drains Prefix before reading the underlying connection.
func (p *PrefixConn) Read(b []byte) (int, error) {
	if len(p.Prefix) > 0 {
		n := copy(b, p.Prefix)
		p.Prefix = p.Prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// CloseWrite half-closes the underlying connection when it supports it
// (*net.TCPConn does); otherwise it does nothing and returns nil.
func (p *PrefixConn) CloseWrite() error {
	if cw, ok := p.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// IsClosed reports errors that mean the peer or we closed the connection:
// net.ErrClosed, a reset (IsReset), or a read cut short (io.ErrUnexpectedEOF).
func IsClosed(err error) bool {
	return errors.Is(err, net.ErrClosed) || IsReset(err) || errors.Is(err, io.ErrUnexpectedEOF)
}
