package proxy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// fwPayload is n pseudo-random bytes (seeded: reproducible).
func fwPayload(n int) []byte {
	r := rand.New(rand.NewPCG(1, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// fwChunked frames b as chunks of size n, ending with trailer lines.
func fwChunked(b []byte, n int, trailer string) []byte {
	var out bytes.Buffer
	for len(b) > 0 {
		k := min(n, len(b))
		fmt.Fprintf(&out, "%x\r\n", k)
		out.Write(b[:k])
		out.WriteString("\r\n")
		b = b[k:]
	}
	out.WriteString("0\r\n" + trailer + "\r\n")
	return out.Bytes()
}

func TestRequestBody(t *testing.T) {
	big := fwPayload(9 << 20)
	bigSum := sha256.Sum256(big)

	for _, via := range []string{"direct", "gateway"} {
		t.Run("HTTP-2/9MiB-post-once-intact-"+via, func(t *testing.T) {
			origin := testworld.NewOrigin(t)
			cfg := Config{LoopbackDirect: true}
			if via == "gateway" {
				cfg = Config{Candidates: proxytest.Gateways(t, false, testworld.NewGateway(t).Addr)}
			}
			addr, _ := proxytest.Start(t, New, cfg)
			c := proxytest.Dial(t, addr)
			c.SetDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(c)
			go func() {
				fmt.Fprintf(c, "POST %s/up HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", origin.URL, origin.Addr, len(big))
				c.Write(big)
				fmt.Fprintf(c, "GET %s/next HTTP/1.1\r\nHost: %s\r\n\r\n", origin.URL, origin.Addr)
			}()
			resp, body := proxytest.ReadResponse(t, br, "POST")
			if resp.StatusCode != 200 || body != origin.Greeting() {
				t.Fatalf("got %d %q", resp.StatusCode, body)
			}
			if resp, _ := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 {
				t.Fatalf("keep-alive after the streamed body: %d", resp.StatusCode)
			}
			seen := origin.Requests()
			if len(seen) != 2 || sha256.Sum256(seen[0].Body) != bigSum {
				t.Fatalf("origin saw %d requests, body %d bytes (hash mismatch)", len(seen), len(seen[0].Body))
			}
		})
	}

	t.Run("HTTP-2/9MiB-chunked-with-trailers-then-keep-alive", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		br := bufio.NewReader(c)
		go func() {
			fmt.Fprintf(c, "PUT %s/up HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n", origin.URL, origin.Addr)
			c.Write(fwChunked(big, 100000, "X-Sum: abc\r\n"))
			fmt.Fprintf(c, "GET %s/next HTTP/1.1\r\nHost: %s\r\n\r\n", origin.URL, origin.Addr)
		}()
		for _, m := range []string{"PUT", "GET"} {
			if resp, body := proxytest.ReadResponse(t, br, m); resp.StatusCode != 200 || body != origin.Greeting() {
				t.Fatalf("%s: %d %q", m, resp.StatusCode, body)
			}
		}
		seen := origin.Requests()
		if len(seen) != 2 || sha256.Sum256(seen[0].Body) != bigSum || seen[1].RequestURI != "/next" {
			t.Fatalf("origin saw %d requests", len(seen))
		}
		if seen[0].Header.Get("X-Sum") != "" {
			t.Fatal("trailer leaked into the header")
		}
	})

	t.Run("HTTP-2/small-chunked-buffered-sent-with-length", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "POST %s/ HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n%s", origin.URL, origin.Addr, fwChunked([]byte("hello chunked world"), 5, "X-T: 1\r\n"))
		fmt.Fprintf(c, "GET %s/2 HTTP/1.1\r\nHost: %s\r\n\r\n", origin.URL, origin.Addr)
		proxytest.ReadResponse(t, br, "POST")
		if resp, _ := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 {
			t.Fatalf("keep-alive after chunked body: %d", resp.StatusCode)
		}
		s := origin.Requests()[0]
		if string(s.Body) != "hello chunked world" || s.Header.Get("Content-Length") != "19" {
			t.Fatalf("body %q, headers %v", s.Body, s.Header)
		}
	})

	t.Run("HTTP-2/streamed-body-moves-on-when-first-connect-fails", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		good := testworld.NewGateway(t)
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, testworld.RefusedAddr(t), good.Addr)})
		c := proxytest.Dial(t, addr)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		go func() {
			fmt.Fprintf(c, "POST %s/up HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", origin.URL, origin.Addr, len(big))
			c.Write(big)
		}()
		resp, _ := proxytest.ReadResponse(t, bufio.NewReader(c), "POST")
		if resp.StatusCode != 200 || origin.Count() != 1 || sha256.Sum256(origin.Requests()[0].Body) != bigSum {
			t.Fatalf("got %d, origin %d", resp.StatusCode, origin.Count())
		}
	})

	t.Run("HTTP-2/streamed-put-not-replayed-after-send", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		bad := testworld.NewGateway(t)
		bad.SetMode(testworld.ModeResetAfterSend)
		good := testworld.NewGateway(t)
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, bad.Addr, good.Addr)})
		c := proxytest.Dial(t, addr)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		go func() {
			fmt.Fprintf(c, "PUT %s/up HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", origin.URL, origin.Addr, len(big))
			c.Write(big)
		}()
		resp, body := proxytest.ReadResponse(t, bufio.NewReader(c), "PUT")
		if resp.StatusCode != 502 || !strings.Contains(body, "streamed") || good.Requests() != 0 {
			t.Fatalf("got %d %q, next gateway %d", resp.StatusCode, body, good.Requests())
		}
	})

	t.Run("HTTP-2/expect-100-continue-put-within-2s", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		for _, via := range []string{"direct", "gateway"} {
			cfg := Config{LoopbackDirect: true}
			if via == "gateway" {
				cfg = Config{Candidates: proxytest.Gateways(t, false, testworld.NewGateway(t).Addr)}
			}
			addr, _ := proxytest.Start(t, New, cfg)
			c := proxytest.Dial(t, addr)
			c.SetDeadline(time.Now().Add(2 * time.Second))
			br := bufio.NewReader(c)
			start := time.Now()
			fmt.Fprintf(c, "PUT %s/e HTTP/1.1\r\nHost: %s\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n", origin.URL, origin.Addr)
			line, err := br.ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
				t.Fatalf("%s: want 100 Continue, got %q %v", via, line, err)
			}
			br.ReadString('\n') // blank line ending the interim answer
			io.WriteString(c, "abcd")
			resp, _ := proxytest.ReadResponse(t, br, "PUT")
			if resp.StatusCode != 200 || time.Since(start) > 2*time.Second {
				t.Fatalf("%s: %d after %v", via, resp.StatusCode, time.Since(start))
			}
		}
		for _, s := range origin.Requests() {
			if string(s.Body) != "abcd" || s.Header.Get("Expect") != "" {
				t.Fatalf("origin saw %q, Expect %q", s.Body, s.Header.Get("Expect"))
			}
		}
	})

	t.Run("HTTP-2/expect-100-client-that-does-not-wait", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		c.SetDeadline(time.Now().Add(2 * time.Second))
		fmt.Fprintf(c, "PUT %s/e HTTP/1.1\r\nHost: %s\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nabcd", origin.URL, origin.Addr)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 100 {
			t.Fatalf("want the interim 100: %v %v", resp, err)
		}
		if resp, _ := proxytest.ReadResponse(t, br, "PUT"); resp.StatusCode != 200 {
			t.Fatalf("got %d", resp.StatusCode)
		}
	})

	t.Run("HTTP-2/client-leaves-mid-body-nothing-forwarded", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t)
		addr, srv := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, gw.Addr), Cooldown: time.Minute})
		c := proxytest.Dial(t, addr)
		fmt.Fprintf(c, "POST %s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\nonly ten b", origin.URL, origin.Addr)
		c.(*net.TCPConn).CloseWrite()
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("read: %v", err)
		}
		if gw.Accepted() != 0 || origin.Count() != 0 {
			t.Fatalf("truncated body forwarded: gateway %d origin %d", gw.Accepted(), origin.Count())
		}
		if len(srv.Engine().Decisions()) != 0 {
			t.Fatal("a decision was recorded for a request never sent")
		}
	})

	t.Run("HTTP-2/client-leaves-mid-streamed-body-no-cooldown", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw := testworld.NewGateway(t)
		addr, srv := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, gw.Addr), Cooldown: time.Minute})
		c := proxytest.Dial(t, addr)
		fmt.Fprintf(c, "POST %s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", origin.URL, origin.Addr, len(big))
		c.Write(big[:1<<20])
		testkit.WaitFor(t, 5*time.Second, "gateway got the request", func() bool { return gw.Requests() == 1 })
		c.Close()
		testkit.WaitFor(t, 5*time.Second, "decision", func() bool { return len(srv.Engine().Decisions()) == 1 })
		if d := srv.Engine().Decisions()[0]; d.Error != "client gone" {
			t.Fatalf("decision %+v", d)
		}
		if cooling(srv.Engine(), gw.Addr, origin.Addr) {
			t.Fatal("client disconnect cooled the gateway")
		}
		for _, s := range origin.Requests() {
			if len(s.Body) == len(big) {
				t.Fatal("origin saw a complete body the client never sent")
			}
		}
	})

	t.Run("HTTP-2/malformed-chunked-400", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		resp, _ := proxytest.Send(t, addr, "POST "+origin.URL+"/ HTTP/1.1\r\nHost: "+origin.Addr+"\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n")
		if resp.StatusCode != 400 || origin.Count() != 0 {
			t.Fatalf("got %d, origin %d", resp.StatusCode, origin.Count())
		}
	})
}
