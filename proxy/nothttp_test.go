package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
)

// A client whose first byte cannot start a request line (a TLS
// ClientHello from an https:// proxy URL, a SOCKS greeting, a NUL) is
// answered 400 at once with a body naming the mistake, closed, and
// counted; the head timeout is far longer than the bound each case allows,
// so a client left waiting for it fails.
func TestNotHTTPClientsAnsweredAtOnce(t *testing.T) {
	const headTimeout = 60 * time.Second
	const answerWithin = 15 * time.Second
	addr, srv := proxytest.Start(t, New, Config{HeadTimeout: headTimeout})

	// refusal sends first, reads the whole answer up to the close and
	// returns its status, body and how long it took.
	refusal := func(t *testing.T, first []byte) (int, string, time.Duration) {
		t.Helper()
		c := proxytest.Dial(t, addr)
		c.SetDeadline(time.Now().Add(answerWithin))
		start := time.Now()
		if _, err := c.Write(first); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer within %v: %v", answerWithin, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("body: %v", err)
		}
		if !resp.Close {
			t.Error("answer without Connection: close")
		}
		return resp.StatusCode, string(body), time.Since(start)
	}

	t.Run("HTTP-5d/tls-client-hello-gets-400-use-http-scheme", func(t *testing.T) {
		before := srv.Engine().Traffic().NotHTTP
		// A TLS 1.2 record header and the start of a ClientHello; the
		// rest never comes, as a client waiting for a ServerHello.
		hello := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}
		status, body, took := refusal(t, hello)
		if status != 400 {
			t.Fatalf("status %d, want 400", status)
		}
		proxytest.MustContain(t, body, "this is an HTTP proxy: use http:// in the proxy URL")
		if took >= answerWithin {
			t.Fatalf("answered after %v", took)
		}
		notHTTPCounted(t, srv, func(n engine.NotHTTP) bool { return n.TLS == before.TLS+1 && n.Other == before.Other })
	})
	t.Run("HTTP-5d/tls-handshake-fails-fast-with-plain-http-reply", func(t *testing.T) {
		// A real TLS client: it reads the 400 as a non-TLS record and
		// fails at once instead of timing out.
		c := proxytest.Dial(t, addr)
		c.SetDeadline(time.Now().Add(answerWithin))
		tc := tls.Client(c, &tls.Config{ServerName: "proxy.example", MinVersion: tls.VersionTLS12})
		err := tc.Handshake()
		if err == nil {
			t.Fatal("handshake with a plain-HTTP proxy succeeded")
		}
		if !strings.Contains(err.Error(), "does not look like a TLS handshake") {
			t.Fatalf("handshake error %v, want the plain-HTTP reply seen", err)
		}
	})
	t.Run("HTTP-5d/socks-greeting-gets-400", func(t *testing.T) {
		before := srv.Engine().Traffic().NotHTTP
		status, body, _ := refusal(t, []byte{0x05, 0x01, 0x00})
		if status != 400 {
			t.Fatalf("status %d, want 400", status)
		}
		proxytest.MustContain(t, body, "use http:// in the proxy URL")
		notHTTPCounted(t, srv, func(n engine.NotHTTP) bool { return n.SOCKS == before.SOCKS+1 })
	})
	t.Run("HTTP-5d/other-non-token-byte-gets-generic-400", func(t *testing.T) {
		for _, first := range [][]byte{{0x00}, {' '}, {0x80, 0x01}, []byte("{\"a\":1}")} {
			before := srv.Engine().Traffic().NotHTTP
			status, body, _ := refusal(t, first)
			if status != 400 {
				t.Fatalf("%q: status %d, want 400", first, status)
			}
			proxytest.MustContain(t, body, "does not start with an HTTP request line")
			notHTTPCounted(t, srv, func(n engine.NotHTTP) bool { return n.Other == before.Other+1 })
		}
	})
	t.Run("HTTP-5d/garbage-after-keep-alive-request-gets-400", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		fmt.Fprintf(c, "GET %s/ HTTP/1.1\r\nHost: %s\r\n\r\n", origin.URL, origin.Addr)
		if resp, _ := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 {
			t.Fatalf("first request: %d", resp.StatusCode)
		}
		c.Write([]byte{0x16, 0x03, 0x01})
		resp, body := proxytest.ReadResponse(t, br, "GET")
		if resp.StatusCode != 400 {
			t.Fatalf("status %d, want 400", resp.StatusCode)
		}
		proxytest.MustContain(t, body, "use http:// in the proxy URL")
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("after the 400: %v, want EOF", err)
		}
	})
	t.Run("HTTP-5d/empty-lines-before-request-line-still-served", func(t *testing.T) {
		// RFC 9112 §2.2: CR and LF may start a head.
		origin := testworld.NewOrigin(t)
		c := proxytest.Dial(t, addr)
		fmt.Fprintf(c, "\r\nGET %s/ HTTP/1.1\r\nHost: %s\r\n\r\n", origin.URL, origin.Addr)
		if resp, _ := proxytest.ReadResponse(t, bufio.NewReader(c), "GET"); resp.StatusCode != 200 {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
	})
}

// notHTTPCounted checks srv's non-HTTP counters: the refusal is counted
// before its answer is written, so a client that read the answer sees it.
func notHTTPCounted(t *testing.T, srv *Server, ok func(engine.NotHTTP) bool) {
	t.Helper()
	if n := srv.Engine().Traffic().NotHTTP; !ok(n) {
		t.Fatalf("non-HTTP counters %+v", n)
	}
}

func TestStartsRequestLine(t *testing.T) {
	t.Run("HTTP-5d/token-bytes-and-line-ends-start-a-head", func(t *testing.T) {
		for b := 0; b < 256; b++ {
			want := b == '\r' || b == '\n' || b > ' ' && b < 0x7f && !strings.ContainsRune("\"(),/:;<=>?@[\\]{}", rune(b))
			if got := startsRequestLine(byte(b)); got != want {
				t.Errorf("startsRequestLine(%#x) = %v, want %v", b, got, want)
			}
		}
	})
}
