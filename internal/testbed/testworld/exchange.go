package testworld

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// PingPong sends each size in sizes as one message of random bytes from
// client and reads it intact at sink before it sends the next, so that
// every message is its own wake-up of what copies between the two (a relay,
// a tunnel through the proxy). sink may be client itself, for a tunnel to an
// echo origin. It returns the bytes sent. A message that does not arrive
// whole and unchanged within 10 s, or a failed write, fails tb (Fatalf: call
// it from the goroutine running the test). The write runs on its own
// goroutine, as a bulk message fills the socket buffers before sink reads.
func PingPong(tb testing.TB, client, sink net.Conn, sizes []int) int64 {
	tb.Helper()
	var total int64
	for i, size := range sizes {
		msg := make([]byte, size)
		rand.Read(msg)
		werr := make(chan error, 1)
		go func() { _, err := client.Write(msg); werr <- err }()
		got := make([]byte, size)
		sink.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(sink, got); err != nil || !bytes.Equal(got, msg) {
			tb.Fatalf("message %d (%d bytes): intact=%v, %v", i, size, bytes.Equal(got, msg), err)
		}
		if err := <-werr; err != nil {
			tb.Fatalf("message %d (%d bytes): write: %v", i, size, err)
		}
		total += int64(size)
	}
	return total
}
