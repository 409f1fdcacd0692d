package netutil

import (
	"net"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/windows"
)

// TestWinsockErrnos checks the codes winsock really returns, which Go's
// invented syscall.ECONNRESET and EADDRINUSE do not match on Windows.
func TestWinsockErrnos(t *testing.T) {
	op := func(name string, e syscall.Errno) error {
		return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError(name, e)}
	}
	for _, tc := range []struct {
		name             string
		err              error
		reset, addrInUse bool
	}{
		{"HTTP-3/wsarecv-connection-reset", op("wsarecv", windows.WSAECONNRESET), true, false},
		{"HTTP-3/wsasend-connection-aborted", op("wsasend", windows.WSAECONNABORTED), true, false},
		{"HTTP-3/overlapped-netname-deleted", op("wsarecv", windows.ERROR_NETNAME_DELETED), true, false},
		{"LIS-1/bind-address-in-use", op("bind", windows.WSAEADDRINUSE), false, true},
		{"HTTP-3/connection-refused-is-neither", op("connectex", windows.WSAECONNREFUSED), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsReset(tc.err); got != tc.reset {
				t.Fatalf("IsReset(%v) = %v", tc.err, got)
			}
			if got := IsClosed(tc.err); got != tc.reset {
				t.Fatalf("IsClosed(%v) = %v", tc.err, got)
			}
			if got := IsAddrInUse(tc.err); got != tc.addrInUse {
				t.Fatalf("IsAddrInUse(%v) = %v", tc.err, got)
			}
		})
	}
}
