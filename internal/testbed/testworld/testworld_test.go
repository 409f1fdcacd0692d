package testworld

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
)

func TestMain(m *testing.M) {
	ChildMain(nil)
	goleak.VerifyTestMain(m)
}

// client returns an http.Client using proxyURL (may be "") and trusting o's
// certificate; its idle connections are closed at cleanup.
func client(t *testing.T, proxyURL string, o *Origin) *http.Client {
	tr := &http.Transport{}
	if proxyURL != "" {
		u, err := url.Parse(proxyURL)
		if err != nil {
			t.Fatal(err)
		}
		tr.Proxy = http.ProxyURL(u)
	}
	if o != nil && o.CertPool != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: o.CertPool}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, string(b)
}

// dialRaw opens a TCP connection with a 5 s overall deadline.
func dialRaw(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func TestOrigin(t *testing.T) {
	t.Run("HTTP-1/plain-origin-records-requests", func(t *testing.T) {
		o := NewNamedOrigin(t, "a")
		resp, body := get(t, client(t, "", nil), o.URL+"/x?q=1")
		if resp.StatusCode != 200 || body != "origin a\n" || o.Greeting() != body {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
		seen := o.Requests()
		if o.Count() != 1 || seen[0].Method != "GET" || seen[0].RequestURI != "/x?q=1" || seen[0].Host != o.Addr {
			t.Fatalf("seen %+v", seen)
		}
	})
	t.Run("HTTP-1/handler-sees-body", func(t *testing.T) {
		o := NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.WriteHeader(201)
			w.Write(b)
		}))
		resp, err := client(t, "", nil).Post(o.URL, "text/plain", strings.NewReader("ping"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 || string(b) != "ping" || string(o.Requests()[0].Body) != "ping" {
			t.Fatalf("got %d %q, seen %q", resp.StatusCode, b, o.Requests()[0].Body)
		}
	})
	t.Run("CON-1/tls-origin-cert-pool", func(t *testing.T) {
		o := NewTLSOrigin(t)
		if !strings.HasPrefix(o.URL, "https://127.0.0.1:") {
			t.Fatalf("URL %q", o.URL)
		}
		if _, body := get(t, client(t, "", o), o.URL); body != o.Greeting() {
			t.Fatalf("body %q", body)
		}
	})
}

func TestGatewayPass(t *testing.T) {
	t.Run("HTTP-5b/plain-keep-alive-and-origin-form", func(t *testing.T) {
		a, b := NewNamedOrigin(t, "a"), NewNamedOrigin(t, "b")
		g := NewGateway(t, WithName("gw1"))
		c := client(t, g.URL, nil)
		for _, o := range []*Origin{a, b, a} {
			resp, body := get(t, c, o.URL+"/p?q=1")
			if body != o.Greeting() || resp.Header.Get("X-Testworld-Gateway") != "gw1" {
				t.Fatalf("body %q header %q", body, resp.Header.Get("X-Testworld-Gateway"))
			}
		}
		if g.Requests() != 3 || g.Accepted() != 1 || g.Connects() != 0 {
			t.Fatalf("requests %d accepted %d connects %d", g.Requests(), g.Accepted(), g.Connects())
		}
		if s := a.Requests()[1]; s.RequestURI != "/p?q=1" || s.Host != a.Addr {
			t.Fatalf("origin saw %+v", s)
		}
		if got := g.Targets(); len(got) != 3 || got[1] != b.Addr {
			t.Fatalf("targets %q", got)
		}
	})
	t.Run("CON-2/connect-tls-through-gateway", func(t *testing.T) {
		o := NewTLSOrigin(t)
		g := NewGateway(t)
		if _, body := get(t, client(t, g.URL, o), o.URL+"/v1"); body != o.Greeting() {
			t.Fatalf("body %q", body)
		}
		if g.Connects() != 1 || g.Requests() != 0 {
			t.Fatalf("connects %d requests %d", g.Connects(), g.Requests())
		}
	})
	t.Run("HTTP-5/hop-by-hop-removed", func(t *testing.T) {
		o := NewOrigin(t)
		g := NewGateway(t)
		c, br := dialRaw(t, g.Addr)
		io.WriteString(c, "GET "+o.URL+"/h HTTP/1.1\r\nHost: "+o.Addr+"\r\nConnection: X-Secret, keep-alive\r\n"+
			"X-Secret: 1\r\nKeep-Alive: 5\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\n"+
			"TE: trailers\r\nUpgrade: h2c\r\nX-Keep: yes\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := o.Requests()[0].Header
		for _, f := range []string{"X-Secret", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Te", "Upgrade"} {
			if v := h.Get(f); v != "" {
				t.Errorf("origin got %s: %q", f, v)
			}
		}
		if h.Get("X-Keep") != "yes" || g.LastProxyAuthorization() != "Basic eA==" {
			t.Errorf("X-Keep %q, last auth %q", h.Get("X-Keep"), g.LastProxyAuthorization())
		}
	})
	t.Run("GW-5/non-loopback-target-refused-and-route", func(t *testing.T) {
		o := NewOrigin(t)
		g := NewGateway(t, WithRoute("api.example.com:80", o.Addr))
		c := client(t, g.URL, nil)
		if resp, _ := get(t, c, "http://example.org/"); resp.StatusCode != 502 {
			t.Fatalf("status %d; want 502", resp.StatusCode)
		}
		if _, body := get(t, c, "http://API.example.com/r"); body != o.Greeting() || o.Requests()[0].Host != "API.example.com" {
			t.Fatalf("body %q seen %+v", body, o.Requests())
		}
	})
}

// tcpTarget accepts one connection, reads until EOF, then writes reply and
// closes; got receives what it read.
func tcpTarget(t *testing.T, reply string) (addr string, got <-chan string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			ch <- "accept: " + err.Error()
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c)
		ch <- string(b)
		io.WriteString(c, reply)
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String(), ch
}

func TestGatewayTunnel(t *testing.T) {
	t.Run("CON-2/half-close-and-early-bytes", func(t *testing.T) {
		addr, got := tcpTarget(t, "bye")
		g := NewGateway(t)
		c, br := dialRaw(t, g.Addr)
		// CONNECT and the first tunnel bytes in one write (CON-2).
		io.WriteString(c, "CONNECT "+addr+" HTTP/1.1\r\nHost: "+addr+"\r\n\r\nhello")
		line, _ := br.ReadString('\n')
		blank, _ := br.ReadString('\n')
		if line != "HTTP/1.1 200 Connection established\r\n" || blank != "\r\n" {
			t.Fatalf("answer %q %q", line, blank)
		}
		c.(*net.TCPConn).CloseWrite()
		if s := <-got; s != "hello" {
			t.Fatalf("target got %q", s)
		}
		if rest, err := io.ReadAll(br); err != nil || string(rest) != "bye" {
			t.Fatalf("client got %q, %v", rest, err)
		}
	})
	t.Run("LIS-3/close-ends-open-tunnel", func(t *testing.T) {
		o := NewOrigin(t) // an idle HTTP server keeps the tunnel open
		g := NewGateway(t)
		c, br := dialRaw(t, g.Addr)
		io.WriteString(c, "CONNECT "+o.Addr+" HTTP/1.1\r\n\r\n")
		if line, _ := br.ReadString('\n'); !strings.Contains(line, " 200 ") {
			t.Fatalf("answer %q", line)
		}
		g.Close()
		if _, err := io.ReadAll(br); err != nil && !isReset(err) {
			t.Fatalf("read after close: %v", err)
		}
	})
}

func isReset(err error) bool { return netutil.IsReset(err) }

func TestGatewayModes(t *testing.T) {
	t.Run("ORD-6/blackhole-accepts-and-stays-silent", func(t *testing.T) {
		g := NewGateway(t)
		g.SetMode(ModeBlackhole)
		c, br := dialRaw(t, g.Addr)
		io.WriteString(c, "CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		var ne net.Error
		if _, err := br.ReadByte(); !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("read = %v; want timeout", err)
		}
		if g.Accepted() != 1 || g.Mode().String() != "blackhole" {
			t.Fatalf("accepted %d mode %v", g.Accepted(), g.Mode())
		}
	})
	t.Run("CD-1/reset-after-head", func(t *testing.T) {
		g := NewGateway(t)
		g.SetMode(ModeReset)
		c, br := dialRaw(t, g.Addr)
		io.WriteString(c, "CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n")
		if _, err := br.ReadByte(); !isReset(err) {
			t.Fatalf("read = %v; want ECONNRESET", err)
		}
		if g.Connects() != 1 {
			t.Fatalf("connects %d", g.Connects())
		}
	})
	t.Run("HTTP-3/reset-after-send-plain-delivers", func(t *testing.T) {
		o := NewOrigin(t)
		g := NewGateway(t)
		g.SetMode(ModeResetAfterSend)
		c, br := dialRaw(t, g.Addr)
		io.WriteString(c, "POST "+o.URL+"/m HTTP/1.1\r\nHost: "+o.Addr+"\r\nContent-Length: 4\r\n\r\nbody")
		if _, err := br.ReadByte(); !isReset(err) {
			t.Fatalf("read = %v; want ECONNRESET", err)
		}
		if s := o.Requests(); len(s) != 1 || string(s[0].Body) != "body" || s[0].Method != "POST" {
			t.Fatalf("origin saw %+v", s)
		}
	})
	t.Run("CON-3/reset-after-send-connect", func(t *testing.T) {
		addr, got := tcpTarget(t, "")
		g := NewGateway(t)
		g.SetMode(ModeResetAfterSend)
		c, br := dialRaw(t, g.Addr)
		io.WriteString(c, "CONNECT "+addr+" HTTP/1.1\r\n\r\n")
		if line, _ := br.ReadString('\n'); !strings.Contains(line, " 200 ") {
			t.Fatalf("answer %q", line)
		}
		br.ReadString('\n')
		io.WriteString(c, "first")
		if s := <-got; s != "first" {
			t.Fatalf("target got %q", s)
		}
		if _, err := br.ReadByte(); !isReset(err) {
			t.Fatalf("read = %v; want ECONNRESET", err)
		}
	})
	for _, code := range []int{403, 407, 502, 503} {
		t.Run("CD-1/status-"+http.StatusText(code), func(t *testing.T) {
			g := NewGateway(t, WithName("gs"))
			g.SetMode(ModeStatus(code))
			c, br := dialRaw(t, g.Addr)
			io.WriteString(c, "CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n")
			resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
			if err != nil || resp.StatusCode != code {
				t.Fatalf("resp %v err %v", resp, err)
			}
			if (code == 407) != (resp.Header.Get("Proxy-Authenticate") != "") {
				t.Fatalf("Proxy-Authenticate %q", resp.Header.Get("Proxy-Authenticate"))
			}
			o := NewOrigin(t)
			resp, _ = get(t, client(t, g.URL, nil), o.URL)
			if resp.StatusCode != code || o.Count() != 0 {
				t.Fatalf("plain status %d, origin count %d", resp.StatusCode, o.Count())
			}
		})
	}
	t.Run("HTTP-4/delay-holds-answer-but-forwards", func(t *testing.T) {
		const d = 300 * time.Millisecond
		o := NewOrigin(t)
		g := NewGateway(t)
		g.SetMode(ModeDelay(d))
		start := time.Now()
		if _, body := get(t, client(t, g.URL, nil), o.URL); body != o.Greeting() {
			t.Fatalf("body %q", body)
		}
		if el := time.Since(start); el < d {
			t.Fatalf("answered after %v; want ≥ %v", el, d)
		}
	})
	t.Run("GW-4/auth", func(t *testing.T) {
		o := NewOrigin(t)
		g := NewGateway(t, WithAuth("user", "p@ss"))
		if resp, _ := get(t, client(t, g.URL, nil), o.URL); resp.StatusCode != 407 ||
			resp.Header.Get("Proxy-Authenticate") == "" || g.LastProxyAuthorization() != "" {
			t.Fatalf("no creds: %d %q", resp.StatusCode, resp.Header.Get("Proxy-Authenticate"))
		}
		if resp, _ := get(t, client(t, "http://user:bad@"+g.Addr, nil), o.URL); resp.StatusCode != 407 {
			t.Fatalf("bad creds: %d", resp.StatusCode)
		}
		if _, body := get(t, client(t, g.AuthURL, nil), o.URL); body != o.Greeting() {
			t.Fatalf("good creds: %q", body)
		}
		if g.LastProxyAuthorization() != "Basic dXNlcjpwQHNz" || o.Requests()[0].Header.Get("Proxy-Authorization") != "" {
			t.Fatalf("last auth %q", g.LastProxyAuthorization())
		}
		tlsO := NewTLSOrigin(t)
		if _, body := get(t, client(t, g.AuthURL, tlsO), tlsO.URL); body != tlsO.Greeting() {
			t.Fatalf("CONNECT with creds: %q", body)
		}
	})
	t.Run("ORD-6/mode-switch-at-runtime", func(t *testing.T) {
		o := NewOrigin(t)
		g := NewGateway(t)
		c := client(t, g.URL, nil)
		g.SetMode(ModeStatus(503))
		if resp, _ := get(t, c, o.URL); resp.StatusCode != 503 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		g.SetMode(ModePass)
		if resp, _ := get(t, c, o.URL); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}

func TestAddrs(t *testing.T) {
	t.Run("CD-1/refused", func(t *testing.T) {
		_, err := net.DialTimeout("tcp", RefusedAddr(t), 2*time.Second)
		if !errors.Is(err, refusedErrno) {
			t.Fatalf("dial = %v; want %v", err, refusedErrno)
		}
	})
	t.Run("ORD-6/blackhole-listener", func(t *testing.T) {
		c, br := dialRaw(t, Blackhole(t))
		io.WriteString(c, "CONNECT x:1 HTTP/1.1\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		var ne net.Error
		if _, err := br.ReadByte(); !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("read = %v; want timeout", err)
		}
	})
}
