package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/selfcert"
)

// smallBody is the answer body of every origin request except /bulk.
const smallBody = "ok\n"

// bulkChunk is written repeatedly by GET /bulk until the client goes away.
var bulkChunk = bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB

// origin is a minimal, fast HTTP/1.1 origin on loopback: every path answers
// 200 with a 3-byte body and keep-alive; GET /bulk streams bytes without a
// length until the client closes. It speaks plain HTTP on one listener and
// TLS (ECDSA P-256 self-signed, IP SAN 127.0.0.1) on another. It is written
// on raw sockets so that the origin costs as little CPU as possible and the
// proxies' share of the 2-core budget is what differs between rows.
type origin struct {
	plain    net.Listener
	tlsLn    []net.Listener
	tlsConf  *tls.Config
	certPool *x509.CertPool

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// newOrigin listens for plain HTTP on 127.0.0.1:0 and for TLS on each of
// tlsAddrs (the first that fails to bind is replaced by 127.0.0.1:0).
func newOrigin(tlsAddrs ...string) (*origin, error) {
	cert, pool, err := selfSigned()
	if err != nil {
		return nil, err
	}
	o := &origin{
		tlsConf:  &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		certPool: pool,
		conns:    map[net.Conn]struct{}{},
	}
	if o.plain, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	o.serve(o.plain, false)
	for _, a := range tlsAddrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			ln, err = net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				o.close()
				return nil, err
			}
		}
		o.tlsLn = append(o.tlsLn, ln)
		o.serve(ln, true)
	}
	return o, nil
}

func (o *origin) plainAddr() string { return o.plain.Addr().String() }
func (o *origin) tlsAddr() string   { return o.tlsLn[0].Addr().String() }

func (o *origin) serve(ln net.Listener, useTLS bool) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.mu.Lock()
			o.conns[c] = struct{}{}
			o.mu.Unlock()
			o.wg.Add(1)
			go func() {
				defer o.wg.Done()
				defer func() {
					c.Close()
					o.mu.Lock()
					delete(o.conns, c)
					o.mu.Unlock()
				}()
				var rw net.Conn = c
				if useTLS {
					tc := tls.Server(c, o.tlsConf)
					tc.SetDeadline(time.Now().Add(10 * time.Second))
					if tc.Handshake() != nil {
						return
					}
					tc.SetDeadline(time.Time{})
					rw = tc
				}
				serveHTTP(rw)
			}()
		}
	}()
}

// serveHTTP answers requests on c until the client closes, asks to close,
// or requests /bulk.
func serveHTTP(c net.Conn) {
	br := bufio.NewReaderSize(c, 4096)
	bw := bufio.NewWriterSize(c, 4096)
	for {
		path, keep, err := readOriginRequest(br)
		if err != nil {
			return
		}
		if path == "/bulk" {
			bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n")
			for bw.Flush() == nil {
				if _, err := c.Write(bulkChunk); err != nil {
					return
				}
			}
			return
		}
		bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n")
		if !keep {
			bw.WriteString("Connection: close\r\n")
		}
		bw.WriteString("\r\n" + smallBody)
		if bw.Flush() != nil || !keep {
			return
		}
	}
}

// readOriginRequest reads one request head (and discards a Content-Length
// body) and returns the path and whether the connection stays open
// (HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with keep-alive).
func readOriginRequest(br *bufio.Reader) (path string, keep bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return "", false, err
	}
	f := bytes.Fields(line)
	if len(f) != 3 {
		return "", false, errors.New("bad request line")
	}
	path = string(f[1])
	if i := bytes.Index(f[1], []byte("://")); i >= 0 { // absolute-form from a gateway
		rest := f[1][i+3:]
		if j := bytes.IndexByte(rest, '/'); j >= 0 {
			path = string(rest[j:])
		} else {
			path = "/"
		}
	}
	keep = bytes.Equal(f[2], []byte("HTTP/1.1"))
	var cl int64
	for i := 0; i < 200; i++ {
		l, err := br.ReadSlice('\n')
		if err != nil {
			return "", false, err
		}
		l = bytes.TrimRight(l, "\r\n")
		if len(l) == 0 {
			if cl > 0 {
				if _, err := io.CopyN(io.Discard, br, cl); err != nil {
					return "", false, err
				}
			}
			return path, keep, nil
		}
		name, value, ok := bytes.Cut(l, []byte{':'})
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "Connection"):
			if asciiEqualFold(value, "close") {
				keep = false
			} else if asciiEqualFold(value, "keep-alive") {
				keep = true
			}
		case asciiEqualFold(name, "Content-Length"):
			cl, _ = strconv.ParseInt(string(value), 10, 64)
		}
	}
	return "", false, errors.New("too many header lines")
}

func asciiEqualFold(b []byte, s string) bool { return bytes.EqualFold(b, []byte(s)) }

// close stops the listeners and closes every open connection.
func (o *origin) close() {
	if o.plain != nil {
		o.plain.Close()
	}
	for _, ln := range o.tlsLn {
		ln.Close()
	}
	o.mu.Lock()
	for c := range o.conns {
		c.Close()
	}
	o.mu.Unlock()
	o.wg.Wait()
}

// selfSigned makes the bench origin's in-memory certificate for 127.0.0.1
// and localhost, and a pool that trusts it.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	c, err := selfcert.Loopback("dual-proxy bench origin")
	return c.TLS, c.Pool, err
}
