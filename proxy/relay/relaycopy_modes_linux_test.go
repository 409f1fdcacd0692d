package relay

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// copyResult is what tunnelCopy.copy returned.
type copyResult struct {
	n   int64
	err error
}

// startCopy runs c.copy(dst, src) on its own goroutine.
func startCopy(c *tunnelCopy, dst, src net.Conn) <-chan copyResult {
	ch := make(chan copyResult, 1)
	go func() {
		n, err := c.copy(dst, src)
		ch <- copyResult{n, err}
	}()
	return ch
}

// waitCopy returns copy's result, failing the test after 10 s.
func waitCopy(t *testing.T, ch <-chan copyResult) copyResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("copy did not end 10 s after the source's FIN")
		return copyResult{}
	}
}

// TestCopyTunnelModes: copyTunnel moves small messages with read(2) and
// write(2) and bulk with splice(2), loses no byte when it switches, and
// keeps the tunnel's half-close (SPEC CON-2 relay; reused
// tunnels at the read/write relay's cost, bulk at io.Copy's).
func TestCopyTunnelModes(t *testing.T) {
	pair := tcpPairs(t)
	open := func(t *testing.T) (client, src, dst, sink net.Conn) {
		client, src = pair()
		dst, sink = pair()
		t.Cleanup(func() { client.Close(); src.Close(); dst.Close(); sink.Close() })
		return client, src, dst, sink
	}
	t.Run("CON-2/small-messages-are-read-not-spliced", func(t *testing.T) {
		client, src, dst, sink := open(t)
		var c tunnelCopy
		done := startCopy(&c, dst, src)
		var sizes []int
		for i := range 100 {
			sizes = append(sizes, 1+i*317%(copyBufSize-1)) // 1 … one byte short of the buffer
		}
		total := testworld.PingPong(t, client, sink, sizes)
		client.(*net.TCPConn).CloseWrite()
		if r := waitCopy(t, done); r.n != total || r.err != nil {
			t.Fatalf("copy: %d bytes, %v; want %d, nil (EOF)", r.n, r.err, total)
		}
		if c.spliced != 0 {
			t.Fatalf("%d of %d bytes of small messages went through splice, want 0 (read and write)", c.spliced, total)
		}
	})
	t.Run("CON-2/bulk-is-spliced-and-sizes-around-the-buffer-intact", func(t *testing.T) {
		client, src, dst, sink := open(t)
		var c tunnelCopy
		done := startCopy(&c, dst, src)
		// Exactly a buffer (a full read: bulk), then small (back to reads),
		// one short of and one over a buffer, bulk, and small again.
		sizes := []int{copyBufSize, 10, copyBufSize - 1, copyBufSize + 1, 4 << 20, 5, copyBufSize, 1, 3 << 20, 7}
		total := testworld.PingPong(t, client, sink, sizes)
		client.(*net.TCPConn).CloseWrite()
		if r := waitCopy(t, done); r.n != total || r.err != nil {
			t.Fatalf("copy: %d bytes, %v; want %d, nil (EOF)", r.n, r.err, total)
		}
		if c.spliced == 0 {
			t.Fatalf("none of %d bytes (7 MiB of them in two bulk messages) went through splice", total)
		}
		t.Logf("%d of %d bytes spliced", c.spliced, total)
	})
	t.Run("CON-2/fin-queued-behind-a-short-read-ends-the-copy", func(t *testing.T) {
		client, src, dst, sink := open(t)
		client.Write([]byte("x"))
		client.(*net.TCPConn).CloseWrite()
		waitFINReceived(t, src) // byte and FIN both queued before the first read
		src.SetReadDeadline(time.Now().Add(5 * time.Second))
		var c tunnelCopy
		r := waitCopy(t, startCopy(&c, dst, src))
		if r.n != 1 || r.err != nil {
			t.Fatalf("copy of a byte and a FIN: %d, %v; want 1, nil (the EOF, not the deadline)", r.n, r.err)
		}
		got, _ := io.ReadAll(io.LimitReader(sink, 1))
		if string(got) != "x" {
			t.Fatalf("sink got %q, want x", got)
		}
	})
	for _, noPipe := range []bool{true, false} {
		name := "CON-2/full-destination-waits-and-loses-nothing/splice"
		if noPipe {
			name = "CON-2/full-destination-waits-and-loses-nothing/reads-only"
		}
		t.Run(name, func(t *testing.T) {
			client, src, dst, sink := open(t)
			// A small send buffer (the sender's side: shrinking the
			// receiver's buffer mid-connection makes TCP drop segments).
			dst.(*net.TCPConn).SetWriteBuffer(4096)
			c := tunnelCopy{noPipe: noPipe}
			done := startCopy(&c, dst, src)
			want := make([]byte, 1<<20)
			rand.Read(want)
			go func() { client.Write(want); client.(*net.TCPConn).CloseWrite() }()
			// sink reads nothing until the copy found dst full (EAGAIN).
			for end := time.Now().Add(10 * time.Second); c.dstWaits.Load() == 0; {
				if time.Now().After(end) {
					t.Fatal("copy never found the destination full with 1 MiB for a 4 KiB send buffer and an unread receiver")
				}
				runtime.Gosched()
			}
			sink.SetReadDeadline(time.Now().Add(10 * time.Second))
			got := make([]byte, len(want))
			if n, err := io.ReadFull(sink, got); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("sink got %d of %d bytes, intact=%v: %v", n, len(want), bytes.Equal(got, want), err)
			}
			if r := waitCopy(t, done); r.n != int64(len(want)) || r.err != nil {
				t.Fatalf("copy: %d bytes, %v; want %d, nil", r.n, r.err, len(want))
			}
			if noPipe && c.spliced != 0 {
				t.Fatalf("%d bytes spliced without a pipe", c.spliced)
			}
		})
	}
}

// waitFINReceived polls c's TCP state until the peer's FIN arrived
// (CLOSE_WAIT), failing after 5 s.
func waitFINReceived(t *testing.T, c net.Conn) {
	t.Helper()
	const tcpCloseWait = 8 // include/net/tcp_states.h
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); ; {
		var state uint8
		rc.Control(func(fd uintptr) {
			if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
				state = info.State
			}
		})
		if state == tcpCloseWait {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("no FIN received after 5 s (TCP state %d)", state)
		}
		runtime.Gosched()
	}
}

// TestRelayIdleAfterTraffic: a tunnel that carried small messages and a
// bulk burst both ways and is now idle keeps its two relay goroutines at
// their smallest stacks (SPEC CON-2 relay; ≤ 16 KiB per idle tunnel; the
// descriptors it holds are proxy's TestRelayIdleAfterBulk).
func TestRelayIdleAfterTraffic(t *testing.T) {
	t.Run("CON-2/idle-after-traffic-keeps-two-small-stacks", func(t *testing.T) {
		pair := tcpPairs(t)
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		const n = 300
		for range n {
			client, pc := pair()
			pu, dest := pair()
			t.Cleanup(func() { client.Close(); dest.Close() })
			Run(pc, pu, time.Hour, time.Hour, func(int64, int64) {})
			testworld.PingPong(t, client, dest, []int{5, 100 << 10})
			testworld.PingPong(t, dest, client, []int{5, 100 << 10})
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		// Two 2 KiB stacks (a copy nested one level deeper grows them to
		// 4 KiB each); the race detector's frames are larger.
		budget := stackBudget
		if per := float64(m1.StackInuse-m0.StackInuse) / n; per > float64(budget) {
			t.Fatalf("%.0f bytes of goroutine stacks per idle tunnel after traffic, want ≤ %d KiB", per, budget>>10)
		}
	})
}
