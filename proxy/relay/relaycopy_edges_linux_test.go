package relay

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// TestCopyTunnelEndBehindData: a FIN or a reset that arrives right behind
// data, while the copy waits for the next message, ends the copy at once:
// the read after the data finds it (the runtime's netpoller is
// edge-triggered, so a copy that skipped that read would wait for an edge
// that never comes). Sizes around the buffer and bulk; repeated, since
// whether FIN and data arrive in one wake-up is timing (SPEC CON-2: EOF
// is propagated, an error closes the tunnel).
func TestCopyTunnelEndBehindData(t *testing.T) {
	pair := tcpPairs(t)
	sizes := []int{1, 63, 89, copyBufSize - 1, copyBufSize, copyBufSize + 1, 3 * copyBufSize, 1 << 20}
	// open starts a copy and moves one message through it, so that the
	// copy has waited for readability before the data under test.
	open := func(t *testing.T) (client, dst, sink net.Conn, done <-chan copyResult) {
		client, src := pair()
		dst, sink = pair()
		t.Cleanup(func() { client.Close(); src.Close(); dst.Close(); sink.Close() })
		src.SetReadDeadline(time.Now().Add(20 * time.Second)) // a lost edge ends at the deadline
		done = startCopy(&tunnelCopy{}, dst, src)
		testworld.PingPong(t, client, sink, []int{7})
		return client, dst, sink, done
	}
	for _, size := range sizes {
		rounds := 20
		if size > 4*copyBufSize {
			rounds = 4
		}
		t.Run("CON-2/fin-right-behind-data-ends-the-copy/"+sizeLabel(size), func(t *testing.T) {
			for range rounds {
				client, dst, sink, done := open(t)
				msg := make([]byte, size)
				rand.Read(msg)
				got := make(chan []byte, 1)
				go func() { b, _ := io.ReadAll(sink); got <- b }()
				start := time.Now()
				go func() { client.Write(msg); client.(*net.TCPConn).CloseWrite() }()
				r := waitCopy(t, done)
				if r.err != nil || r.n != int64(7+size) {
					t.Fatalf("copy of %d bytes and a FIN after a wait: %d, %v after %v; want %d, nil (EOF)", size, r.n, r.err, time.Since(start), 7+size)
				}
				dst.(*net.TCPConn).CloseWrite() // as the relay half-closes
				if b := <-got; !bytes.Equal(b, msg) {
					t.Fatalf("sink got %d of %d bytes, intact=%v", len(b), size, bytes.Equal(b, msg))
				}
			}
		})
		t.Run("CON-2/reset-right-behind-data-ends-the-copy/"+sizeLabel(size), func(t *testing.T) {
			for range rounds {
				client, _, sink, done := open(t)
				go io.Copy(io.Discard, sink)
				msg := make([]byte, size)
				start := time.Now()
				go func() {
					client.Write(msg)
					client.(*net.TCPConn).SetLinger(0) // close sends RST
					client.Close()
				}()
				r := waitCopy(t, done)
				if r.err == nil || errors.Is(r.err, os.ErrDeadlineExceeded) {
					t.Fatalf("copy of %d bytes and a reset after a wait: %d, %v after %v; want a connection error", size, r.n, r.err, time.Since(start))
				}
			}
		})
	}
}

func sizeLabel(n int) string {
	switch {
	case n >= 1<<20:
		return strconv.Itoa(n>>20) + "MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}
