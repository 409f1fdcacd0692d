package proxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

func TestConnect(t *testing.T) {
	t.Run("CON-2/exact-reply-and-payload-in-one-write", func(t *testing.T) {
		got := make(chan []byte, 1)
		dst := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			b := make([]byte, 11)
			io.ReadFull(c, b)
			got <- b
			c.Write([]byte("pong"))
		})
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		// CONNECT head and the first payload bytes in one write.
		if _, err := c.Write([]byte("CONNECT " + dst + " HTTP/1.1\r\nHost: " + dst + "\r\n\r\nhello world")); err != nil {
			t.Fatal(err)
		}
		want := "HTTP/1.1 200 Connection established\r\n\r\n"
		buf := make([]byte, len(want))
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		if string(buf) != want {
			t.Fatalf("reply %q, want exactly %q", buf, want)
		}
		select {
		case b := <-got:
			if string(b) != "hello world" {
				t.Fatalf("destination got %q", b)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("payload never reached the destination")
		}
		pong := make([]byte, 4)
		if _, err := io.ReadFull(c, pong); err != nil || string(pong) != "pong" {
			t.Fatalf("pong: %q %v", pong, err)
		}
	})

	t.Run("CON-2/half-close-still-gets-1MiB-reply", func(t *testing.T) {
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		dst := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			io.Copy(io.Discard, c) // until the client's FIN
			c.Write(big)
		})
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c, br := proxytest.Tunnel(t, addr, dst)
		io.WriteString(c, "request bytes")
		c.CloseWrite()
		got, err := io.ReadAll(br)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, big) {
			t.Fatalf("got %d bytes, want %d", len(got), len(big))
		}
	})

	t.Run("CON-1/ipv6-literal", func(t *testing.T) {
		ln, err := net.Listen("tcp", "[::1]:0")
		if err != nil {
			t.Fatalf("IPv6 loopback unavailable: %v", err)
		}
		ln.Close()
		dst := proxytest.TCPServer(t, "[::1]:0", func(c net.Conn) { c.Write([]byte("six")) })
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		io.WriteString(c, "CONNECT "+dst+" HTTP/1.1\r\nHost: "+dst+"\r\n\r\n")
		if !strings.HasPrefix(dst, "[::1]:") {
			t.Fatalf("dst %s", dst)
		}
		if st, body := proxytest.ReadConnectReply(t, br); st != 200 {
			t.Fatalf("status %d %s", st, body)
		}
		b := make([]byte, 3)
		if _, err := io.ReadFull(br, b); err != nil || string(b) != "six" {
			t.Fatalf("got %q %v", b, err)
		}
	})

	t.Run("CON-1/dead-first-gateway-fails-over-to-second", func(t *testing.T) {
		dst := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) { c.Write([]byte("hi")) })
		good := testworld.NewGateway(t)
		addr, srv := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, true, testworld.RefusedAddr(t), good.Addr)})
		_, br := proxytest.Tunnel(t, addr, dst)
		b := make([]byte, 2)
		if _, err := io.ReadFull(br, b); err != nil || string(b) != "hi" {
			t.Fatalf("got %q %v", b, err)
		}
		if good.Connects() != 1 {
			t.Fatalf("good gateway saw %d CONNECTs", good.Connects())
		}
		d := srv.Engine().Decisions()
		if len(d) != 1 || d[0].Candidate != "http://"+good.Addr || len(d[0].Failed) != 1 || d[0].Failed[0].Phase != "gateway-connect" {
			t.Fatalf("decisions %+v", d)
		}
	})

	for _, tc := range []struct {
		name    string
		gateway func(testing.TB) string
		timeout time.Duration
		phase   string
		within  time.Duration
		n       int // gateways
	}{
		{"CON-3/all-dead-502-within-connect-timeout", testworld.RefusedAddr, 2 * time.Second, "gateway-connect", 4 * time.Second, 2},
		{"CON-3/blackholed-gateway-bounded-by-connect-timeout", testworld.Blackhole, 300 * time.Millisecond, "connect-response", 3 * time.Second, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gws []string
			for range tc.n {
				gws = append(gws, tc.gateway(t))
			}
			addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, gws...), ConnectTimeout: tc.timeout})
			c := proxytest.Dial(t, addr)
			br := bufio.NewReader(c)
			start := time.Now()
			io.WriteString(c, "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n")
			st, body := proxytest.ReadConnectReply(t, br)
			if st != 502 {
				t.Fatalf("status %d", st)
			}
			proxytest.MustContain(t, body, tc.phase)
			if el := time.Since(start); el > tc.within {
				t.Fatalf("took %v", el)
			}
		})
	}
}

func TestShutdownStopsHealthLoop(t *testing.T) {
	t.Run("LIS-3/shutdown-stops-health-loop", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		hu, _ := url.Parse(origin.URL + "/health")
		srv, err := New(Config{LoopbackDirect: true, HealthURL: hu, HealthInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { srv.Serve(ln); close(done) }()
		deadline := time.Now().Add(5 * time.Second)
		for srv.Engine().HealthRuns() < 2 {
			if time.Now().After(deadline) {
				t.Fatal("health loop never ran twice")
			}
			time.Sleep(5 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
		if err := goleak.Find(goleak.IgnoreTopFunction("testing.(*T).Run"), goleak.IgnoreTopFunction("testing.tRunner.func1"), goleak.IgnoreTopFunction("testing.(*T).Parallel")); err != nil {
			for _, s := range []string{"health.(*Checker)"} {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("health loop survived shutdown: %v", err)
				}
			}
		}
	})
}

func TestShutdownGrace(t *testing.T) {
	t.Run("LIS-3/in-flight-plain-request-finishes-within-grace", func(t *testing.T) {
		release := make(chan struct{})
		origin := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(release)
			time.Sleep(300 * time.Millisecond) // a slow origin: answers during the grace period
			io.WriteString(w, "late but fine")
		}))
		srv, err := New(Config{LoopbackDirect: true})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { srv.Serve(ln); close(done) }()
		c := proxytest.Dial(t, ln.Addr().String())
		br := bufio.NewReader(c)
		io.WriteString(c, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: "+origin.Addr+"\r\n\r\n")
		<-release
		shut := make(chan struct{})
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			srv.Shutdown(ctx)
			close(shut)
		}()
		resp, body := proxytest.ReadResponse(t, br, "GET")
		if resp.StatusCode != 200 || body != "late but fine" {
			t.Fatalf("in-flight request cut by shutdown: %d %q", resp.StatusCode, body)
		}
		<-shut
		<-done
	})
}

func TestConnectTargets(t *testing.T) {
	for _, bad := range []string{"127.0.0.1:+443", "127.0.0.1:0443", "127.0.0.1:0", "127.0.0.1:65536", "[::1", "host", "host:443:1"} {
		t.Run("CON-1/bad-target/"+bad, func(t *testing.T) {
			if _, _, err := splitConnectTarget(bad); err == nil {
				t.Fatalf("%q accepted", bad)
			}
		})
	}
	t.Run("CON-1/gateway-status-2000-is-not-200", func(t *testing.T) {
		gw := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			bufio.NewReader(c).ReadString('\n')
			io.WriteString(c, "HTTP/1.1 2000 OK\r\n\r\n")
		})
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, gw), ConnectTimeout: 2 * time.Second})
		c := proxytest.Dial(t, addr)
		io.WriteString(c, "CONNECT example.test:8443 HTTP/1.1\r\nHost: example.test:8443\r\n\r\n")
		if st, _ := proxytest.ReadConnectReply(t, bufio.NewReader(c)); st != 502 {
			t.Fatalf("status %d", st)
		}
	})
}
