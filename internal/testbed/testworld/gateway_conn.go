package testworld

// Request flow of one client connection (Gateway.serve):
//
//	read head ─┬─ blackhole ─────────────── discard until closed
//	           ├─ reset ─────────────────── RST
//	           ├─ auth wrong ────────────── 407, close
//	           ├─ status N ──────────────── N, close
//	           ├─ CONNECT ── dial ── 200 ── relay (half-close aware)
//	           └─ absolute-form ── origin ── answer, next head (keep-alive)

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
)

// serve handles one client connection until it closes or a mode ends it.
func (g *Gateway) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		if g.Mode().kind == kindBlackhole {
			io.Copy(io.Discard, br)
			return
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return // EOF, closed, or garbage: a real gateway hangs up too
		}
		m := socksReplyAsHTTP(g.Mode())
		if m.kind == kindBlackhole {
			io.Copy(io.Discard, br)
			return
		}
		connect := req.Method == http.MethodConnect
		target := req.URL.Host
		if !connect {
			if _, _, err := net.SplitHostPort(target); err != nil && target != "" {
				target = net.JoinHostPort(strings.Trim(target, "[]"), "80")
			}
		}
		if connect {
			g.connects.Add(1)
		} else {
			g.requests.Add(1)
		}
		g.mu.Lock()
		g.lastAuth = req.Header.Get("Proxy-Authorization")
		g.targets = append(g.targets, target)
		g.mu.Unlock()
		if g.onHead != nil {
			g.onHead(GatewayHead{Method: req.Method, Target: req.RequestURI, UserAgent: req.Header.Get("User-Agent"),
				ProxyAuthorization: req.Header.Get("Proxy-Authorization") != ""})
		}

		switch {
		case m.kind == kindReset:
			reset(c)
			return
		case g.wantAuth != "" && req.Header.Get("Proxy-Authorization") != g.wantAuth:
			g.answer(c, req, http.StatusProxyAuthRequired, "proxy authentication required")
			return
		case m.kind == kindStatus:
			g.answer(c, req, m.status, "status "+fmt.Sprint(m.status))
			return
		case connect:
			g.tunnel(c, br, target, m)
			return
		case req.URL.Scheme != "http" || target == "":
			g.answer(c, req, http.StatusBadRequest, "absolute-form http:// request required")
			return
		}
		if !g.forward(c, req, target, m) {
			return
		}
	}
}

// reset closes c with an RST instead of a FIN (SO_LINGER 0).
func reset(c net.Conn) {
	if cc, ok := c.(*countConn); ok && cc.tcp != nil {
		c = cc.tcp
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// answer writes a gateway-generated response with a short body and closes
// c gracefully: FIN first, then the client's leftovers are read for at most
// 1 s, so the kernel does not turn unread bytes into an RST that would hide
// the answer.
func (g *Gateway) answer(c net.Conn, req *http.Request, code int, reason string) {
	if req != nil && req.Body != nil && !strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		io.Copy(io.Discard, io.LimitReader(req.Body, 16<<20))
	}
	body := fmt.Sprintf("gateway %s: %s\n", g.Name, reason)
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
	b.WriteString("Content-Type: text/plain\r\nConnection: close\r\n")
	fmt.Fprintf(&b, "Content-Length: %d\r\nX-Testworld-Gateway: %s\r\n", len(body), g.Name)
	if code == http.StatusProxyAuthRequired {
		b.WriteString("Proxy-Authenticate: Basic realm=\"testworld\"\r\n")
	}
	b.WriteString("\r\n" + body)
	c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	io.WriteString(c, b.String())
	closeWrite(c)
	c.SetReadDeadline(time.Now().Add(time.Second))
	io.Copy(io.Discard, c)
}

// wait sleeps d; it reports false when the gateway closed first.
func (g *Gateway) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-g.ctx.Done():
		return false
	}
}

// dial opens a tracked connection to target after mapping it through the
// routes. Only loopback IP literals and "localhost" are dialled: the
// gateway never resolves or reaches anything else (SPEC "Test safety").
func (g *Gateway) dial(target string) (net.Conn, error) {
	if to, ok := g.routes[strings.ToLower(target)]; ok {
		target = to
	}
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%w: %q", errRefusedTarget, target)
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	up, err := d.DialContext(g.ctx, "tcp", target)
	if err != nil {
		return nil, err
	}
	if !g.track(up) {
		return nil, net.ErrClosed
	}
	return up, nil
}

// tunnel serves CONNECT: dial, answer 200, relay until both directions end.
func (g *Gateway) tunnel(c net.Conn, br *bufio.Reader, target string, m Mode) {
	up, err := g.dial(target)
	if err != nil {
		g.answer(c, nil, g.dialFailStatus(err), "cannot reach "+target)
		return
	}
	defer g.untrack(up)
	if m.kind == kindDelay && !g.wait(m.delay) {
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	if m.kind == kindResetAfterSend {
		buf := make([]byte, 32<<10)
		if n, _ := br.Read(buf); n > 0 {
			up.Write(buf[:n])
		}
		reset(c)
		return
	}
	g.relay(c, br, up)
}

// relay copies both ways between the client c (read through r) and up
// until both directions end, propagating half-closes.
func (g *Gateway) relay(c net.Conn, r io.Reader, up net.Conn) {
	done := make(chan struct{})
	g.goTracked(func() {
		defer close(done)
		if _, err := io.Copy(c, up); err != nil {
			c.Close()
			up.Close()
			return
		}
		closeWrite(c)
	})
	if _, err := io.Copy(up, r); err != nil {
		c.Close()
		up.Close()
	} else {
		closeWrite(up)
	}
	<-done
}

// serveConn runs the TLS handshake for a WithTLS gateway, then the
// gateway's protocol on the (decrypted) connection.
func (g *Gateway) serveConn(c net.Conn) {
	if g.tlsConf != nil {
		tc := tls.Server(c, g.tlsConf)
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		if err := tc.HandshakeContext(g.ctx); err != nil {
			g.tlsFailures.Add(1)
			return
		}
		tc.SetDeadline(time.Time{})
		c = &countConn{Conn: tc, n: &g.appBytes}
	} else if !g.socks {
		// Plain HTTP gateways keep the *net.TCPConn (reset needs it) and
		// count what serve reads through its buffered reader instead.
		c = &countConn{Conn: c, n: &g.appBytes, tcp: c}
	}
	if g.socks {
		g.serveSOCKS(c)
		return
	}
	g.serve(c)
}

// countConn counts the bytes read into n.
type countConn struct {
	net.Conn
	n   *atomic.Int64
	tcp net.Conn // the raw TCP connection when there is no TLS, for reset
}

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// CloseWrite half-closes the underlying connection (close_notify for TLS).
func (c *countConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// forward sends one absolute-form request to its origin over a fresh
// connection and relays the answer. It reports whether the client
// connection may carry another request.
func (g *Gateway) forward(c net.Conn, req *http.Request, target string, m Mode) bool {
	up, err := g.dial(target)
	if err != nil {
		g.answer(c, req, g.dialFailStatus(err), "cannot reach "+target)
		return false
	}
	defer g.untrack(up)
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// Answer the expectation here so the client sends its body; the
		// origin then gets a plain request (RFC 9110 §10.1.1).
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		req.Header.Del("Expect")
	}
	clientClose := req.Close
	httpmsg.RemoveHopByHop(req.Header)
	req.Close = true // one origin connection per request
	if err := req.Write(up); err != nil {
		g.answer(c, nil, http.StatusBadGateway, "origin write failed")
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(up), req)
	if err != nil {
		g.answer(c, nil, http.StatusBadGateway, "bad origin response")
		return false
	}
	defer resp.Body.Close()
	switch m.kind {
	case kindResetAfterSend:
		reset(c)
		return false
	case kindDelay:
		if !g.wait(m.delay) {
			return false
		}
	}
	httpmsg.RemoveHopByHop(resp.Header)
	resp.Header.Set("X-Testworld-Gateway", g.Name)
	resp.Close = false
	// Without a length or chunking the body ends at close; Response.Write
	// then adds "Connection: close" itself.
	closeDelimited := resp.ContentLength < 0 && len(resp.TransferEncoding) == 0
	if err := resp.Write(c); err != nil {
		return false
	}
	return !clientClose && !closeDelimited
}
