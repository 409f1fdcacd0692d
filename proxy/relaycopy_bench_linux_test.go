package proxy

import (
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// cpuTime is this process's user+system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tcpPairs returns a function that opens one loopback TCP connection pair
// (dialled end, accepted end) per call, on a listener closed by Cleanup.
func tcpPairs(tb testing.TB) func() (net.Conn, net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	return func() (net.Conn, net.Conn) {
		a, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			tb.Fatal(err)
		}
		b, err := ln.Accept()
		if err != nil {
			tb.Fatal(err)
		}
		return a, b
	}
}

// BenchmarkRelayShortTunnel is the relay's share of a short-lived tunnel
// (SPEC CON-2), like a TLS handshake and one request: two exchanges each
// way, the destination closes, then the client. The four sockets are real
// loopback TCP; opening them is part of every operation. cpu-ns/op is the
// process's CPU time (both ends and the relay) per tunnel, steadier than
// ns/op on a shared machine.
func BenchmarkRelayShortTunnel(b *testing.B) {
	pair := tcpPairs(b)
	msg := make([]byte, 512)
	buf := make([]byte, 512)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		client, in := pair()
		out, dest := pair()
		done := make(chan struct{})
		relay(in, out, time.Minute, time.Minute, func(int64, int64) { close(done) })
		for range 2 {
			if _, err := client.Write(msg); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(dest, buf); err != nil {
				b.Fatal(err)
			}
			if _, err := dest.Write(msg); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(client, buf); err != nil {
				b.Fatal(err)
			}
		}
		dest.Close()
		if _, err := client.Read(buf); err != io.EOF {
			b.Fatalf("client read after the destination closed: %v, want EOF", err)
		}
		client.Close()
		<-done
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// copyFuncs are the tunnel copies BenchmarkCopyTunnel compares: ours, and
// the two a minimal Go relay uses (the bench's reference rows).
var copyFuncs = []struct {
	name string
	copy func(dst, src net.Conn) (int64, error)
}{
	{"copyTunnel", copyTunnel},
	{"io.Copy", func(dst, src net.Conn) (int64, error) { return io.Copy(dst, src) }},
	{"readwrite", func(dst, src net.Conn) (int64, error) {
		return io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, make([]byte, 32<<10))
	}},
}

// BenchmarkCopyTunnel is one reused tunnel's relay (SPEC CON-2) with each
// copy function: a request of size bytes goes client → relay → echo, and
// the echo comes back the same way, one round trip per operation. Both
// directions copy with the same function, on loopback TCP, as the relay
// does between client and upstream. cpu-ns/op is the process's CPU time
// (client, relay, echo) per round trip.
func BenchmarkCopyTunnel(b *testing.B) {
	for _, size := range []int{512, 16 << 10, 256 << 10} {
		for _, cf := range copyFuncs {
			b.Run(cf.name+"/"+sizeName(size), func(b *testing.B) { benchCopy(b, cf.copy, size) })
		}
	}
}

func sizeName(n int) string {
	if n >= 1<<10 {
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}

func benchCopy(b *testing.B, copyFn func(dst, src net.Conn) (int64, error), size int) {
	pair := tcpPairs(b)
	client, in := pair()
	out, echo := pair()
	done := make(chan struct{}, 3)
	go func() { copyFn(out, in); out.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { copyFn(in, out); in.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { bufEcho(echo); echo.Close(); done <- struct{}{} }()
	msg := make([]byte, size)
	buf := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		go client.Write(msg)
		if _, err := io.ReadFull(client, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
	client.(*net.TCPConn).CloseWrite()
	for range 3 {
		<-done
	}
	client.Close()
	in.Close()
	out.Close()
}
