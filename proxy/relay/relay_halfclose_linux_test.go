package relay

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// TestRelayHalfCloseBound: after one direction's EOF the other is held for
// halfClose only, whichever side ended first, and bytes sent just before a
// FIN all arrive (SPEC CON-2: the bound is armed instead of waking the
// other direction, and the relay peeks once per wait).
func TestRelayHalfCloseBound(t *testing.T) {
	pair := tcpPairs(t)
	for _, first := range []string{"client", "destination"} {
		t.Run("CON-2/"+first+"-fin-then-silence-closes-after-half-close-bound", func(t *testing.T) {
			client, pc := pair()
			pu, dest := pair()
			defer client.Close()
			defer dest.Close()
			ended := make(chan struct{})
			Run(pc, pu, time.Hour, 300*time.Millisecond, func(int64, int64) { close(ended) })
			// Bytes both ways first: each direction then waits in a window
			// of the idle bound (10 s), which the half-close must shorten.
			client.Write([]byte("a"))
			dest.Write([]byte("b"))
			one := make([]byte, 1)
			if _, err := io.ReadFull(dest, one); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(client, one); err != nil {
				t.Fatal(err)
			}
			fin, other := client, dest
			if first == "destination" {
				fin, other = dest, client
			}
			start := time.Now()
			fin.(*net.TCPConn).CloseWrite()
			other.SetReadDeadline(time.Now().Add(8 * time.Second))
			if b, err := io.ReadAll(other); len(b) != 0 || err != nil {
				t.Fatalf("the half-close did not arrive as EOF: %q %v", b, err)
			}
			select {
			case <-ended:
			case <-time.After(8 * time.Second):
				t.Fatal("the tunnel outlived its half-close bound")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("half-close bound of 300 ms enforced after %v", d)
			}
		})
	}
	t.Run("CON-2/bytes-then-fin-at-once-all-arrive-both-orders", func(t *testing.T) {
		for i := range 50 {
			client, pc := pair()
			pu, dest := pair()
			ended := make(chan struct{})
			Run(pc, pu, time.Hour, 5*time.Second, func(int64, int64) { close(ended) })
			up, down := make([]byte, 1+i*997), make([]byte, 1+i*1499)
			rand.Read(up)
			rand.Read(down)
			go func() { client.Write(up); client.(*net.TCPConn).CloseWrite() }()
			go func() { dest.Write(down); dest.(*net.TCPConn).CloseWrite() }()
			client.SetReadDeadline(time.Now().Add(8 * time.Second))
			dest.SetReadDeadline(time.Now().Add(8 * time.Second))
			gotDown, err1 := io.ReadAll(client)
			gotUp, err2 := io.ReadAll(dest)
			if err1 != nil || err2 != nil || !bytes.Equal(gotUp, up) || !bytes.Equal(gotDown, down) {
				t.Fatalf("round %d: up %d/%d %v, down %d/%d %v", i, len(gotUp), len(up), err2, len(gotDown), len(down), err1)
			}
			select {
			case <-ended:
			case <-time.After(8 * time.Second):
				t.Fatalf("round %d: the tunnel did not end after both FINs", i)
			}
			client.Close()
			dest.Close()
		}
	})
}
