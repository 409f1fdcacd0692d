package netutil

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestIsLocalResource(t *testing.T) {
	wrapped := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"CD-1/emfile-wrapped-in-op-error", wrapped, true},
		{"CD-1/enfile", fmt.Errorf("x: %w", syscall.ENFILE), true},
		{"CD-1/connection-refused-is-not-local", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, false},
		{"CD-1/plain-error", errors.New("too many open files"), false},
		{"CD-1/nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsLocalResource(tc.err); got != tc.want {
				t.Fatalf("IsLocalResource(%v) = %v", tc.err, got)
			}
		})
	}
}

// TestSocketErrnos provokes the errors on real loopback sockets, so each OS's
// own codes are checked (on Windows winsock's WSAE… values, which
// syscall.ECONNRESET and EADDRINUSE do not match).
func TestSocketErrnos(t *testing.T) {
	t.Run("LIS-1/bind-to-a-held-port-is-addr-in-use", func(t *testing.T) {
		held, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer held.Close()
		ln, err := net.Listen("tcp", held.Addr().String())
		if err == nil {
			ln.Close()
			t.Fatal("second bind of a held port succeeded")
		}
		if !IsAddrInUse(err) || IsReset(err) || IsLocalResource(err) {
			t.Fatalf("IsAddrInUse(%v) = %v, IsReset %v", err, IsAddrInUse(err), IsReset(err))
		}
	})
	t.Run("HTTP-3/read-after-peer-reset-is-reset-and-closed", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		s.(*net.TCPConn).SetLinger(0) // close sends RST (not under Wine 8: FIN, .ci/wine-tests)
		s.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Read(make([]byte, 1))
		if !IsReset(err) || !IsClosed(err) || IsAddrInUse(err) {
			t.Fatalf("read after RST: %v: IsReset %v IsClosed %v", err, IsReset(err), IsClosed(err))
		}
	})
	t.Run("HTTP-3/refused-and-eof-are-not-reset", func(t *testing.T) {
		for _, err := range []error{io.EOF, &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, nil} {
			if IsReset(err) || IsAddrInUse(err) {
				t.Fatalf("%v counted as reset or addr-in-use", err)
			}
		}
	})
}
