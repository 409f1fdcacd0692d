package relay

import (
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tcpState is c's TCP state (TCP_INFO: unix.BPF_TCP_*).
func tcpState(t *testing.T, c net.Conn) uint8 {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		t.Fatal(err, ierr)
	}
	return info.State
}

// waitState polls c until its TCP state is want, failing after 10 s.
func waitState(t *testing.T, c net.Conn, want uint8) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); tcpState(t, c) != want; {
		if time.Now().After(end) {
			t.Fatalf("TCP state %d after 10 s, want %d", tcpState(t, c), want)
		}
		time.Sleep(time.Millisecond) // polling the kernel's state, not synchronising goroutines
	}
}

// waitEnded waits for a tunnel's done, failing after 10 s.
func waitEnded(t *testing.T, ended <-chan struct{}) {
	t.Helper()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the tunnel did not end within 10 s")
	}
}

// TestRelayFreshUpstream checks the relay of a just-dialled upstream with
// whatever it sent before the relay started. (Skipping the first
// read of an upstream nothing had read, waiting for readability first,
// hangs the first case: since the runtime's poller forgets earlier
// readiness at the start of every RawConn.Read, so the read that finds
// nothing is what arms the wait.)
func TestRelayFreshUpstream(t *testing.T) {
	pair := tcpPairs(t)
	t.Run("CON-2/fresh-upstream-bytes-and-fin-before-the-relay-are-delivered", func(t *testing.T) {
		client, pc := pair()
		pu, dest := pair() // pu: dialled, never read
		defer client.Close()
		if _, err := dest.Write([]byte("banner")); err != nil {
			t.Fatal(err)
		}
		dest.Close()
		waitState(t, pu, unix.BPF_TCP_CLOSE_WAIT) // bytes and FIN are in pu's queue
		ended := make(chan struct{})
		Run(pc, pu, time.Hour, time.Hour, func(int64, int64) { close(ended) })
		client.SetReadDeadline(time.Now().Add(10 * time.Second))
		if got, err := io.ReadAll(client); err != nil || string(got) != "banner" {
			t.Fatalf("client read %q, %v; want \"banner\" then EOF", got, err)
		}
		client.Close()
		waitEnded(t, ended)
	})
	t.Run("CON-2/fresh-upstream-that-speaks-first-after-the-start", func(t *testing.T) {
		client, pc := pair()
		pu, dest := pair()
		ended := make(chan struct{})
		Run(pc, pu, time.Hour, time.Hour, func(int64, int64) { close(ended) })
		if _, err := dest.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 5)
		client.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(client, got); err != nil || string(got) != "hello" {
			t.Fatalf("client read %q, %v", got, err)
		}
		if _, err := client.Write([]byte("hi")); err != nil {
			t.Fatal(err)
		}
		client.(*net.TCPConn).CloseWrite()
		dest.SetReadDeadline(time.Now().Add(10 * time.Second))
		if got, err := io.ReadAll(dest); err != nil || string(got) != "hi" {
			t.Fatalf("destination read %q, %v; want \"hi\" then EOF", got, err)
		}
		dest.Close()
		client.SetReadDeadline(time.Now().Add(10 * time.Second))
		if rest, err := io.ReadAll(client); err != nil || len(rest) != 0 {
			t.Fatalf("client read %q, %v after the destination closed; want EOF", rest, err)
		}
		client.Close()
		waitEnded(t, ended)
	})
	t.Run("CON-2/fresh-upstream-reset-before-the-relay-ends-the-tunnel", func(t *testing.T) {
		client, pc := pair()
		pu, dest := pair()
		defer client.Close()
		dest.(*net.TCPConn).SetLinger(0)
		dest.Close() // a reset
		waitState(t, pu, unix.BPF_TCP_CLOSE)
		ended := make(chan struct{})
		Run(pc, pu, time.Hour, time.Hour, func(int64, int64) { close(ended) })
		waitEnded(t, ended)
		client.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(client); err != nil {
			t.Logf("client read: %v", err) // EOF or a reset: either ends it
		}
	})
}
