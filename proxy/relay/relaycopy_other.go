//go:build !linux

package relay

import "net"

// copyTunnelFor copies src to dst for one direction of t (nil: none) until EOF
// (nil error) or an error. Outside Linux io.Copy holds no pipe while it waits,
// so it is used, with every write touching t (bytes that move to a slow reader
// are activity for the idle bound).
func copyTunnelFor(t *tunnel, dst, src net.Conn) (int64, error) { return ioCopy(t, dst, src) }

// sendQueued is the number of bytes in c's send queue: unknown (-1)
// outside Linux.
func sendQueued(net.Conn) int64 { return -1 }
