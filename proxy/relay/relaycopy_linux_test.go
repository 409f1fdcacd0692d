package relay

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// TestCopyTunnel covers copyTunnel's copy loop on real TCP pairs (SPEC
// CON-2 relay): bytes and EOF, a reset, and the read deadline of a wait.
func TestCopyTunnel(t *testing.T) {
	pair := tcpPairs(t)
	t.Run("CON-2/copies-every-byte-until-eof", func(t *testing.T) {
		client, src := pair()
		dst, sink := pair()
		defer src.Close()
		defer dst.Close()
		want := make([]byte, 3<<20)
		rand.Read(want)
		go func() {
			for off := 0; off < len(want); off += 100_000 {
				client.Write(want[off:min(off+100_000, len(want))])
			}
			client.Close()
		}()
		got := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(sink); got <- b }()
		n, err := copyTunnel(dst, src)
		dst.Close()
		if err != nil || n != int64(len(want)) {
			t.Fatalf("copyTunnel: %d bytes, %v; want %d, nil (EOF)", n, err, len(want))
		}
		if b := <-got; !bytes.Equal(b, want) {
			t.Fatalf("destination got %d bytes, intact=%v", len(b), bytes.Equal(b, want))
		}
	})
	t.Run("CON-2/reset-by-peer-is-an-error", func(t *testing.T) {
		client, src := pair()
		dst, sink := pair()
		defer src.Close()
		defer dst.Close()
		defer sink.Close()
		client.Write([]byte("x"))
		client.(*net.TCPConn).SetLinger(0) // close sends RST
		client.Close()
		src.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := copyTunnel(dst, src); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("copyTunnel after RST: %v, want a connection error", err)
		}
	})
	t.Run("CON-2/read-deadline-ends-the-wait", func(t *testing.T) {
		client, src := pair()
		dst, sink := pair()
		defer client.Close()
		defer src.Close()
		defer dst.Close()
		defer sink.Close()
		src.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		start := time.Now()
		if n, err := copyTunnel(dst, src); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("copyTunnel on a silent source: %d, %v; want 0, deadline exceeded", n, err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("the wait ended %v after a 50 ms deadline", took)
		}
	})
}
