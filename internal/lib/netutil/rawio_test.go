package netutil

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (a, b *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-acc
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

func TestRawIO(t *testing.T) {
	t.Run("HTTP-1/raw-io-on-linux-tcp-else-the-conn", func(t *testing.T) {
		a, _ := tcpPair(t)
		_, raw := RawIO(a).(*rawIO)
		if want := runtime.GOOS == "linux"; raw != want {
			t.Fatalf("RawIO(*net.TCPConn) is rawIO: %v, want %v on %s", raw, want, runtime.GOOS)
		}
		p, q := net.Pipe()
		defer p.Close()
		defer q.Close()
		if rw := RawIO(p); rw != io.ReadWriter(p) {
			t.Fatalf("RawIO(net.Pipe) = %T, want the conn itself", rw)
		}
		// A wrapper that embeds a TCP connection keeps its own Read.
		w := &PrefixConn{Conn: a, Prefix: []byte("x")}
		if rw := RawIO(w); rw != io.ReadWriter(w) {
			t.Fatalf("RawIO(*PrefixConn) = %T, want the conn itself", rw)
		}
	})
	t.Run("HTTP-1/raw-io-carries-bytes-both-ways-and-eof", func(t *testing.T) {
		a, b := tcpPair(t)
		ra, rb := RawIO(a), RawIO(b)
		// More than the socket buffers hold: the writer waits for
		// writability in the middle of a write.
		want := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
		werr := make(chan error, 1)
		go func() {
			n, err := ra.Write(want)
			if err == nil && n != len(want) {
				err = io.ErrShortWrite
			}
			a.CloseWrite()
			werr <- err
		}()
		got, err := io.ReadAll(rb)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if err := <-werr; err != nil {
			t.Fatalf("write: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
		}
		if n, err := rb.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Fatalf("read after FIN = %d, %v; want 0, EOF", n, err)
		}
		if n, err := rb.Read(nil); n != 0 || err != nil {
			t.Fatalf("empty read = %d, %v; want 0, nil", n, err)
		}
		// The other way on the same connection.
		if _, err := rb.Write([]byte("pong")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 8)
		if n, err := io.ReadAtLeast(ra, buf, 4); err != nil || string(buf[:n]) != "pong" {
			t.Fatalf("read = %q, %v", buf[:n], err)
		}
	})
	t.Run("HTTP-4/raw-io-read-deadline-is-a-timeout", func(t *testing.T) {
		a, _ := tcpPair(t)
		a.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		start := time.Now()
		_, err := RawIO(a).Read(make([]byte, 8))
		var ne net.Error
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("read past the deadline: %v (%T), want a timeout", err, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("the deadline took %v", d)
		}
	})
	t.Run("HTTP-4/raw-io-write-deadline-ends-a-stuck-write", func(t *testing.T) {
		a, _ := tcpPair(t) // the peer never reads
		a.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := RawIO(a).Write(make([]byte, 64<<20))
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("write to a peer that does not read: %v, want a timeout", err)
		}
	})
	t.Run("LIS-3/raw-io-close-ends-a-waiting-read", func(t *testing.T) {
		a, _ := tcpPair(t)
		rerr := make(chan error, 1)
		go func() {
			_, err := RawIO(a).Read(make([]byte, 8))
			rerr <- err
		}()
		a.Close() // before or during the read: both must end it
		select {
		case err := <-rerr:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("read on a closed conn: %v, want net.ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not end the read")
		}
	})
	t.Run("HTTP-4/raw-io-reset-is-an-op-error", func(t *testing.T) {
		a, b := tcpPair(t)
		b.SetLinger(0)
		b.Close() // RST
		var err error
		buf := make([]byte, 8)
		rw := RawIO(a)
		for i := 0; i < 100 && err == nil; i++ {
			_, err = rw.Write(buf) // the first may still be accepted
			if err == nil {
				_, err = rw.Read(buf)
			}
		}
		var oe *net.OpError
		if !errors.As(err, &oe) {
			t.Fatalf("after the peer's reset: %v (%T), want a *net.OpError", err, err)
		}
	})
}
