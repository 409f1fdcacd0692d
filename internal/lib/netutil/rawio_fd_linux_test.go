package netutil

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// control runs f with c's descriptor (syscall.RawConn.Control).
func control(t *testing.T, c *net.TCPConn, f func(fd uintptr)) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Control(f); err != nil {
		t.Fatal(err)
	}
}

// TestReadWriteFD: ReadFD and WriteFD never wait (the runtime's sockets
// are non-blocking, which is what makes a raw system call safe) and report
// what read(2) and write(2) do; the tunnel copy relies on both (SPEC CON-2
// relay).
func TestReadWriteFD(t *testing.T) {
	t.Run("CON-2/read-of-an-empty-socket-is-eagain-not-a-wait", func(t *testing.T) {
		_, b := tcpPair(t)
		rc, err := b.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		done := make(chan syscall.Errno, 1)
		go rc.Control(func(fd uintptr) { _, errno := ReadFD(fd, buf); done <- errno })
		select {
		case errno := <-done:
			if errno != syscall.EAGAIN {
				t.Fatalf("read of an empty socket: %v, want EAGAIN", errno)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("read of an empty socket waited (a blocking socket?)")
		}
	})
	t.Run("CON-2/read-returns-bytes-then-eof", func(t *testing.T) {
		a, b := tcpPair(t)
		a.Write([]byte("hello"))
		a.CloseWrite()
		buf := make([]byte, 16)
		var got []byte
		for end := time.Now().Add(5 * time.Second); ; {
			var n int
			var errno syscall.Errno
			control(t, b, func(fd uintptr) { n, errno = ReadFD(fd, buf) })
			switch {
			case errno == syscall.EAGAIN && time.Now().Before(end):
				continue
			case errno != 0:
				t.Fatalf("read after %q: %v, want bytes or EOF", got, errno)
			case n > 0:
				got = append(got, buf[:n]...)
				continue
			}
			break
		}
		if string(got) != "hello" {
			t.Fatalf("read %q before EOF, want hello", got)
		}
	})
	t.Run("CON-2/read-reports-a-reset", func(t *testing.T) {
		a, b := tcpPair(t)
		a.SetLinger(0)
		a.Close()
		buf := make([]byte, 16)
		for end := time.Now().Add(5 * time.Second); ; {
			var errno syscall.Errno
			control(t, b, func(fd uintptr) { _, errno = ReadFD(fd, buf) })
			if errno == syscall.ECONNRESET {
				return
			}
			if errno != syscall.EAGAIN || time.Now().After(end) {
				t.Fatalf("read after a reset: %v, want ECONNRESET", errno)
			}
		}
	})
	t.Run("CON-2/write-to-a-full-socket-is-eagain-not-a-wait", func(t *testing.T) {
		a, _ := tcpPair(t)
		a.SetWriteBuffer(4096)
		msg := make([]byte, 64<<10)
		var total int
		var errno syscall.Errno
		control(t, a, func(fd uintptr) {
			for end := time.Now().Add(5 * time.Second); errno == 0 && time.Now().Before(end); {
				var n int
				n, errno = WriteFD(fd, msg)
				total += n
			}
		})
		if errno != syscall.EAGAIN {
			t.Fatalf("writes to an unread peer: %d bytes, then %v; want EAGAIN", total, errno)
		}
	})
}
