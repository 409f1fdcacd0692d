package netutil

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
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
