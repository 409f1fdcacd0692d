package relay

import (
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

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
	cpu0 := testworld.CPUTime(b)
	for b.Loop() {
		client, in := pair()
		out, dest := pair()
		done := make(chan struct{})
		Run(in, out, time.Minute, time.Minute, func(int64, int64) { close(done) })
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
	b.ReportMetric(float64(testworld.CPUTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
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
// copy function: a request goes client → relay → responder and the answer
// comes back the same way, one round trip per operation. Both directions
// copy with the same function, on loopback TCP, as the relay does between
// client and upstream. Sizes are request/answer: 63B/89B are the TLS
// records of bench scenario 2's reused tunnel (strace of dual-proxy: a GET
// and its 3-byte answer under TLS 1.3), the others an echo. tls/c32 runs
// 32 such tunnels at once (the scenario's clients): the relay goroutines
// then share the netpoller's wake-ups as in the bench. cpu-ns/op is the
// process's CPU time (clients, relays, responders) per round trip.
func BenchmarkCopyTunnel(b *testing.B) {
	cases := []struct {
		name      string
		req, resp int
		conc      int
	}{
		{"tls63B-89B", 63, 89, 1},
		{"tls63B-89B/c32", 63, 89, 32},
		{"512B", 512, 512, 1},
		{"16KiB", 16 << 10, 16 << 10, 1},
		{"256KiB", 256 << 10, 256 << 10, 1},
	}
	for _, tc := range cases {
		for _, cf := range copyFuncs {
			b.Run(cf.name+"/"+tc.name, func(b *testing.B) { benchCopy(b, cf.copy, tc.req, tc.resp, tc.conc) })
		}
	}
}

// copyBench is one tunnel of benchCopy: the client's end and what closes.
type copyBench struct {
	client   net.Conn
	closeAll func()
}

// openCopyBench opens client → in ⇄ out → responder, copying both ways
// with copyFn; the responder answers every req bytes with resp bytes.
func openCopyBench(b *testing.B, pair func() (net.Conn, net.Conn), copyFn func(dst, src net.Conn) (int64, error), req, resp int) copyBench {
	client, in := pair()
	out, echo := pair()
	done := make(chan struct{}, 3)
	go func() { copyFn(out, in); out.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { copyFn(in, out); in.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() {
		if req == resp {
			testworld.EchoBuffered(echo)
		} else {
			respond(echo, req, resp)
		}
		echo.Close()
		done <- struct{}{}
	}()
	return copyBench{client, func() {
		client.(*net.TCPConn).CloseWrite()
		for range 3 {
			<-done
		}
		client.Close()
		in.Close()
		out.Close()
	}}
}

// respond writes resp bytes for every req bytes read from c, until EOF.
func respond(c net.Conn, req, resp int) {
	in, out := make([]byte, req), make([]byte, resp)
	for {
		if _, err := io.ReadFull(c, in); err != nil {
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func benchCopy(b *testing.B, copyFn func(dst, src net.Conn) (int64, error), req, resp, conc int) {
	pair := tcpPairs(b)
	tunnels := make([]copyBench, conc)
	for i := range tunnels {
		tunnels[i] = openCopyBench(b, pair, copyFn, req, resp)
	}
	b.SetBytes(int64(req + resp))
	b.ReportAllocs()
	cpu0 := testworld.CPUTime(b)
	if conc == 1 {
		roundTrips(b, tunnels[0].client, req, resp, b.Loop)
	} else {
		next := make(chan net.Conn, conc)
		for _, t := range tunnels {
			next <- t.client
		}
		b.SetParallelism((conc + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) { roundTrips(b, <-next, req, resp, pb.Next) })
	}
	b.ReportMetric(float64(testworld.CPUTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
	for _, t := range tunnels {
		t.closeAll()
	}
}

// roundTrips writes req bytes and reads resp bytes on c while more says so.
func roundTrips(b *testing.B, c net.Conn, req, resp int, more func() bool) {
	msg, buf := make([]byte, req), make([]byte, resp)
	for more() {
		var werr chan error
		if req > 64<<10 {
			werr = make(chan error, 1) // bulk fills the buffers before the answer is read
			go func() { _, err := c.Write(msg); werr <- err }()
		} else if _, err := c.Write(msg); err != nil {
			b.Error(err)
			return
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Error(err)
			return
		}
		if werr != nil {
			if err := <-werr; err != nil {
				b.Error(err)
				return
			}
		}
	}
}
