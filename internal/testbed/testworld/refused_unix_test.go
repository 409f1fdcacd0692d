//go:build unix

package testworld

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// refusedErrno is what a dial to RefusedAddr fails with.
var refusedErrno = syscall.ECONNREFUSED

// TestRefusedPortHeld is Unix-only: there a socket can stay bound without
// listening (holdRefusedPort); on Windows RefusedAddr binds and releases.
func TestRefusedPortHeld(t *testing.T) {
	t.Run("CD-1/refused-port-not-handed-out-again", func(t *testing.T) {
		_, release, ok := holdRefusedPort()
		if !ok {
			t.Fatal("holdRefusedPort failed: Unix can bind a socket without listening")
		}
		release()
		addr := RefusedAddr(t)
		_, port, _ := net.SplitHostPort(addr)
		if ln, err := net.Listen("tcp", "127.0.0.1:"+port); err == nil {
			ln.Close()
			t.Fatalf("a listener could take the refused address %s (another test's origin would answer as the dead gateway)", addr)
		}
		if _, err := net.DialTimeout("tcp", addr, 2*time.Second); !errors.Is(err, refusedErrno) {
			t.Fatalf("dial = %v; want ECONNREFUSED", err)
		}
	})
}
