package upstream

import (
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// TestUpConnRawIO: an upstream TCP connection's reads and writes are raw
// system calls on Linux (netutil.RawIO), and still carry a
// request and its answer.
func TestUpConnRawIO(t *testing.T) {
	t.Run("HTTP-1/upstream-tcp-connection-uses-raw-io-on-linux", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s, err := ln.Accept()
			if err != nil {
				return
			}
			defer s.Close()
			b := make([]byte, 4)
			if _, err := io.ReadFull(s, b); err == nil {
				s.Write(b)
			}
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		uc := newUpConn(c, poolKey{}, 10*time.Second)
		_, isConn := uc.src.conn.(net.Conn)
		if raw := !isConn; raw != (runtime.GOOS == "linux") {
			t.Fatalf("upstream io %T: raw %v, want raw on Linux only", uc.src.conn, raw)
		}
		uc.bw.WriteString("ping")
		if err := uc.bw.Flush(); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4)
		if _, err := io.ReadFull(uc.br, b); err != nil || string(b) != "ping" {
			t.Fatalf("echo: %q, %v", b, err)
		}
		if uc.dw.written != 4 {
			t.Fatalf("written = %d, want 4", uc.dw.written)
		}
		c.Close()
		<-done
	})
}
