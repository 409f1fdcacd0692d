package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// goGateway is a minimal CONNECT-only gateway on loopback for the failover
// scenario: it can be started again on the same address after kill, which a
// real squid cannot do quickly (its PID file lingers ~1-2 s). In blackhole
// mode it accepts TCP and never answers.
type goGateway struct {
	addr      string
	blackhole bool
	// plainTo, when set, is where every plain (absolute-form) request is
	// sent, whatever its host, in origin-form with the connection closed
	// after the answer: the failover scenario's plain-HTTP rows name many
	// hosts that all lead to the bench's origin. "": plain requests get 405.
	plainTo string
	// copyBuf relays with Read/Write through a 32 KiB buffer instead of
	// io.Copy between TCP connections (splice(2) on Linux).
	copyBuf bool

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// newGoGateway listens on addr ("127.0.0.1:0" for a new port).
func newGoGateway(addr string, blackhole bool) (*goGateway, error) {
	g := &goGateway{blackhole: blackhole}
	return g, g.listen(addr)
}

func (g *goGateway) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.ln, g.addr, g.conns = ln, ln.Addr().String(), map[net.Conn]struct{}{}
	g.mu.Unlock()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.mu.Lock()
			g.conns[c] = struct{}{}
			g.mu.Unlock()
			if g.blackhole {
				continue
			}
			g.wg.Add(1)
			go func() {
				defer g.wg.Done()
				g.serve(c)
			}()
		}
	}()
	return nil
}

// serve answers one CONNECT and relays both ways.
func (g *goGateway) serve(c net.Conn) {
	defer g.forget(c)
	defer c.Close()
	br := bufio.NewReader(c)
	line, err := br.ReadSlice('\n')
	if err != nil {
		return
	}
	f := bytes.Fields(line)
	if len(f) == 3 && string(f[0]) != "CONNECT" && g.plainTo != "" && bytes.HasPrefix(f[1], []byte("http://")) {
		g.servePlain(c, br, f)
		return
	}
	if len(f) != 3 || string(f[0]) != "CONNECT" {
		io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	target := string(f[1])
	for {
		l, err := br.ReadSlice('\n')
		if err != nil {
			return
		}
		if len(bytes.TrimRight(l, "\r\n")) == 0 {
			break
		}
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	defer up.Close()
	g.mu.Lock()
	g.conns[up] = struct{}{}
	g.mu.Unlock()
	defer g.forget(up)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	var src io.Reader = br
	if br.Buffered() == 0 {
		src = c // let io.Copy see two *net.TCPConn (splice)
	}
	done := make(chan struct{})
	go func() {
		g.copy(up, src)
		up.(*net.TCPConn).CloseWrite()
		close(done)
	}()
	g.copy(c, up)
	c.Close()
	<-done
}

// servePlain forwards one plain request whose request line is f (method,
// absolute-form target, version) to g.plainTo in origin-form, without a
// body (the bench sends GETs), and relays the answer until the origin
// closes (the request asks it to: Connection: close); then the client's
// connection is closed too.
func (g *goGateway) servePlain(c net.Conn, br *bufio.Reader, f [][]byte) {
	target := f[1][len("http://"):]
	path := []byte("/")
	if i := bytes.IndexByte(target, '/'); i >= 0 {
		path = target[i:]
	}
	var head bytes.Buffer
	fmt.Fprintf(&head, "%s %s %s\r\n", f[0], path, f[2])
	for {
		l, err := br.ReadSlice('\n')
		if err != nil {
			return
		}
		if len(bytes.TrimRight(l, "\r\n")) == 0 {
			// One exchange per connection: the origin closes after its
			// answer, which ends the relay below.
			head.WriteString("Connection: close\r\n\r\n")
			break
		}
		head.Write(l)
	}
	up, err := net.Dial("tcp", g.plainTo)
	if err != nil {
		io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	defer up.Close()
	g.mu.Lock()
	g.conns[up] = struct{}{}
	g.mu.Unlock()
	defer g.forget(up)
	if _, err := up.Write(head.Bytes()); err != nil {
		return
	}
	io.Copy(c, up)
}

// forget drops c from the connections kill closes once serve is done with
// it, so a long run's map (and the GC's work on it) stays the size of the
// open tunnels, as a real relay's would.
func (g *goGateway) forget(c net.Conn) {
	g.mu.Lock()
	delete(g.conns, c)
	g.mu.Unlock()
}

// onlyReader and onlyWriter hide ReaderFrom/WriterTo so that io.CopyBuffer
// uses its buffer.
type onlyReader struct{ io.Reader }
type onlyWriter struct{ io.Writer }

func (g *goGateway) copy(dst io.Writer, src io.Reader) {
	if g.copyBuf {
		io.CopyBuffer(onlyWriter{dst}, onlyReader{src}, make([]byte, 32<<10))
		return
	}
	io.Copy(dst, src)
}

// kill closes the listener and every connection: the gateway "dies" and
// later dials are refused.
func (g *goGateway) kill() {
	g.mu.Lock()
	g.ln.Close()
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// serveRelay runs a reference CONNECT relay on 127.0.0.1:0 until SIGTERM
// or SIGINT; it logs "msg=listening addr=…" like dual-proxy so the bench
// finds the port. It runs in its own process, like dual-proxy, so that
// the reference rows pay the same cross-process scheduling.
func serveRelay(copyBuf bool) error {
	g := &goGateway{copyBuf: copyBuf}
	if err := g.listen("127.0.0.1:0"); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Fprintf(os.Stderr, "msg=listening addr=%s\n", g.addr)
	<-sig
	g.kill()
	return nil
}

// refusedAddr returns a loopback address where nothing listens (bound and
// released), so dials are refused.
func refusedAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	a := ln.Addr().String()
	ln.Close()
	return a, nil
}
