package proxy

import (
	"bufio"
	"context"
	"debug/elf"
	"debug/gosym"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// waitNoStack polls the goroutine dump until no goroutine runs a function
// containing any of frames, or fails after within.
func waitNoStack(t *testing.T, within time.Duration, frames ...string) {
	t.Helper()
	for _, f := range frames {
		if !frameExists(t, f) {
			t.Fatalf("waitNoStack: no function of this binary is named like %q: a renamed or moved function leaves a wait that checks nothing", f)
		}
	}
	deadline := time.Now().Add(within)
	buf := make([]byte, 1<<20)
	for {
		dump := string(buf[:runtime.Stack(buf, true)])
		left := ""
		for _, f := range frames {
			if strings.Contains(dump, f) {
				left = f
			}
		}
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a goroutine still runs %s after %v:\n%s", left, within, dump)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline, not synchronisation
	}
}

var (
	symbolsOnce sync.Once
	symbols     []string
)

// frameExists reports whether some function symbol of the test binary
// contains frame, so that a frame name left behind by a rename fails the
// test instead of passing a wait that can never see it. Only Linux reads the
// function table (ELF); elsewhere every frame counts as known, the Linux run
// keeps the names true.
func frameExists(t *testing.T, frame string) bool {
	t.Helper()
	if runtime.GOOS != "linux" {
		return true
	}
	symbolsOnce.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			return
		}
		f, err := elf.Open(exe)
		if err != nil {
			return
		}
		defer f.Close()
		// The function table (.gopclntab) is kept even where go test
		// strips the symbol table.
		pcln, text := f.Section(".gopclntab"), f.Section(".text")
		if pcln == nil || text == nil {
			return
		}
		data, err := pcln.Data()
		if err != nil {
			return
		}
		tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
		if err != nil {
			return
		}
		for _, fn := range tab.Funcs {
			symbols = append(symbols, fn.Name)
		}
	})
	if symbols == nil {
		t.Fatal("waitNoStack: the test binary's function table could not be read")
	}
	for _, s := range symbols {
		if strings.Contains(s, frame) {
			return true
		}
	}
	return false
}

// openFrames are the functions of an open in progress and its client watch.
var openFrames = []string{"proxy.(*Server).handleConnect", "engine.(*Engine).Open", "proxy/dial.", "proxy.(*clientWatch).run"}

func TestConnectClientGone(t *testing.T) {
	t.Run("CON-1/client-gone-during-slow-open-cancels-it", func(t *testing.T) {
		g := testworld.NewSilentGateway(t)
		before := goleak.IgnoreCurrent() // the gateway's accept loop included: it lives until the cleanup
		gw := g.Addr
		var logs testkit.LogBuffer
		srv, err := New(Config{Candidates: proxytest.Gateways(t, false, "http://"+gw), ConnectTimeout: 30 * time.Second, Cooldown: time.Minute,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan struct{})
		go func() { srv.Serve(ln); close(served) }()

		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n")
		testkit.WaitFor(t, 10*time.Second, "the proxy never dialled the gateway", func() bool { return g.Accepted() == 1 })
		c.Close()
		// The connect timeout is 30 s: only the client's departure ends
		// the open this early.
		testkit.WaitFor(t, 5*time.Second, "the open outlived its client", func() bool { return g.Open() == 0 })
		waitNoStack(t, 5*time.Second, openFrames...)

		out := logs.String()
		if n := strings.Count(out, "CONNECT abandoned"); n != 1 {
			t.Fatalf("%d abandon lines, want 1:\n%s", n, out)
		}
		for _, want := range []string{"host=example.test", "candidate=http://" + gw, "phase=connect-response", `reason="client closed connection"`} {
			proxytest.MustContain(t, out, want)
		}
		if d := proxytest.LastDecision(t, srv.Engine()); d.Error != "client gone" {
			t.Fatalf("decision %+v, want error \"client gone\"", d)
		}
		if cooling(srv.Engine(), proxytest.Gateways(t, false, "http://"+gw)[0].Key(), "example.test:443") {
			t.Fatal("CD-1: a client that left recorded a cooldown")
		}

		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		srv.Shutdown(ctx)
		<-served
		if err := goleak.Find(before); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("CON-1/client-gone-cancels-every-racing-attempt", func(t *testing.T) {
		g1, g2 := testworld.NewSilentGateway(t), testworld.NewSilentGateway(t)
		gw1, gw2 := g1.Addr, g2.Addr
		var logs testkit.LogBuffer
		addr, srv := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+gw1, "http://"+gw2), ConnectTimeout: 30 * time.Second,
			RaceDelay: 20 * time.Millisecond, Cooldown: time.Minute, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		c := proxytest.Dial(t, addr)
		io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n")
		testkit.WaitFor(t, 10*time.Second, "both attempts", func() bool { return g1.Accepted() == 1 && g2.Accepted() == 1 })
		c.Close()
		testkit.WaitFor(t, 5*time.Second, "the attempts outlived their client", func() bool { return g1.Open() == 0 && g2.Open() == 0 })
		waitNoStack(t, 5*time.Second, openFrames...)
		out := logs.String()
		if !strings.Contains(out, "candidate=http://"+gw1+",http://"+gw2) && !strings.Contains(out, "candidate=http://"+gw2+",http://"+gw1) {
			t.Fatalf("the abandon line does not name both attempts:\n%s", out)
		}
		for _, g := range []string{gw1, gw2} {
			if cooling(srv.Engine(), proxytest.Gateways(t, false, "http://"+g)[0].Key(), "example.test:443") {
				t.Fatalf("CD-1: a client that left cooled %s", g)
			}
		}
	})

	t.Run("CON-2/a-client-that-stays-through-a-watched-open-keeps-its-early-bytes", func(t *testing.T) {
		// The open takes long enough for the client watch to start (it reads
		// the client connection); bytes the client sends before the 200
		// stay buffered behind the watch, which goes on, and reach the
		// destination, in order.
		release := make(chan struct{})
		gw := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			br := bufio.NewReader(c)
			for {
				l, err := br.ReadString('\n')
				if err != nil {
					return
				}
				if l == "\r\n" {
					break
				}
			}
			<-release
			io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
			io.Copy(c, br) // echo
		})
		t.Cleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
		})
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+gw), ConnectTimeout: 30 * time.Second})
		c := proxytest.Dial(t, addr)
		io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n")
		waitStack(t, 10*time.Second, "proxy.(*clientWatch).run")
		io.WriteString(c, "early bytes") // before the 200, while the watch reads
		close(release)
		br := bufio.NewReader(c)
		if st, body := proxytest.ReadConnectReply(t, br); st != 200 {
			t.Fatalf("status %d %s", st, body)
		}
		io.WriteString(c, ", then more")
		want := "early bytes, then more"
		got := make([]byte, len(want))
		if _, err := io.ReadFull(br, got); err != nil || string(got) != want {
			t.Fatalf("echo %q %v, want %q", got, err, want)
		}
	})
}

// waitStack polls the goroutine dump until a goroutine runs frame.
func waitStack(t *testing.T, within time.Duration, frame string) {
	t.Helper()
	deadline := time.Now().Add(within)
	buf := make([]byte, 1<<20)
	for !strings.Contains(string(buf[:runtime.Stack(buf, true)]), frame) {
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine runs %s after %v", frame, within)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline, not synchronisation
	}
}

// slowOrigin is a gateway that answers its CONNECT once release is
// closed, then serves as the destination: it reads the tunnel to EOF and
// answers "got:" and what it read.
func slowOrigin(t *testing.T) (addr string, release chan struct{}) {
	release = make(chan struct{})
	addr = proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if l == "\r\n" {
				break
			}
		}
		<-release
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		got, _ := io.ReadAll(br)
		io.WriteString(c, "got:"+string(got))
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return addr, release
}

func TestConnectWatchHalfClose(t *testing.T) {
	// A half-close is not a departure (RFC 9293 §3.6): a client that sends
	// its CONNECT (and maybe its bytes), then FIN, during a slow open gets
	// its tunnel, its bytes reach the destination, and the destination's
	// answer reaches it.
	for _, early := range []string{"", "ping"} {
		name := "CON-1/half-close-during-a-slow-open-is-not-a-departure"
		if early != "" {
			name = "CON-2/half-close-after-early-bytes-during-a-slow-open-carries-them"
		}
		t.Run(name, func(t *testing.T) {
			gw, release := slowOrigin(t)
			addr, srv := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+gw), ConnectTimeout: 30 * time.Second})
			c := proxytest.Dial(t, addr)
			io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n"+early)
			waitStack(t, 10*time.Second, "proxy.(*clientWatch).run")
			c.(*net.TCPConn).CloseWrite()
			// The watch writes the answer's first byte to tell the
			// half-close from a close; the open goes on.
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			first := make([]byte, 1)
			if _, err := io.ReadFull(c, first); err != nil || string(first) != "H" {
				t.Fatalf("first byte %q %v: the open was abandoned", first, err)
			}
			close(release)
			rest, err := io.ReadAll(c)
			want := "HTTP/1.1 200 Connection established\r\n\r\ngot:" + early
			if got := string(first) + string(rest); got != want || err != nil {
				t.Fatalf("client read %q %v, want %q", got, err, want)
			}
			if d := proxytest.LastDecision(t, srv.Engine()); d.Error != "" {
				t.Fatalf("decision %+v, want a served one", d)
			}
		})
	}

	t.Run("CON-1/half-closed-client-then-a-failed-open-gets-the-whole-502", func(t *testing.T) {
		fail := make(chan struct{})
		gw := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			<-fail // then the gateway closes the connection: the open fails
		})
		t.Cleanup(func() {
			select {
			case <-fail:
			default:
				close(fail)
			}
		})
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+gw), ConnectTimeout: 30 * time.Second})
		c := proxytest.Dial(t, addr)
		io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n")
		waitStack(t, 10*time.Second, "proxy.(*clientWatch).run")
		c.(*net.TCPConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		first := make([]byte, 1)
		if _, err := io.ReadFull(c, first); err != nil {
			t.Fatalf("first byte: %v", err)
		}
		close(fail)
		br := bufio.NewReader(io.MultiReader(strings.NewReader(string(first)), c))
		if st, body := proxytest.ReadConnectReply(t, br); st != 502 {
			t.Fatalf("status %d %s, want 502", st, body)
		}
	})

	t.Run("CON-1/client-that-sent-early-bytes-and-left-cancels-the-open", func(t *testing.T) {
		g := testworld.NewSilentGateway(t)
		var logs testkit.LogBuffer
		addr, srv := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+g.Addr), ConnectTimeout: 30 * time.Second,
			Cooldown: time.Minute, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		c := proxytest.Dial(t, addr)
		io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n")
		testkit.WaitFor(t, 10*time.Second, "the proxy never dialled the gateway", func() bool { return g.Accepted() == 1 })
		waitStack(t, 10*time.Second, "proxy.(*clientWatch).run")
		io.WriteString(c, "early bytes") // read by the watch, kept for the tunnel
		c.Close()
		// The connect timeout is 30 s: only the client's departure ends
		// the open this early.
		testkit.WaitFor(t, 5*time.Second, "the open outlived its client", func() bool { return g.Open() == 0 })
		waitNoStack(t, 5*time.Second, openFrames...)
		proxytest.MustContain(t, logs.String(), "CONNECT abandoned")
		if d := proxytest.LastDecision(t, srv.Engine()); d.Error != "client gone" {
			t.Fatalf("decision %+v, want error \"client gone\"", d)
		}
	})
}
