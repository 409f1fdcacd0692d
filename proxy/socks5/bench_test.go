package socks5

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/proxy"
)

// benchGateway is a minimal in-process SOCKS5 server on loopback: it
// answers the greeting (password method when auth), RFC 1929 and CONNECT
// with success, then waits for the client to close.
func benchGateway(b *testing.B, auth bool) (addr string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				var buf [512]byte
				if _, err := io.ReadFull(c, buf[:2]); err != nil {
					return
				}
				io.ReadFull(c, buf[:buf[1]])
				if auth {
					c.Write([]byte{5, 2})
					io.ReadFull(c, buf[:2]) // VER ULEN
					ulen := int(buf[1])
					io.ReadFull(c, buf[:ulen+1]) // UNAME PLEN
					io.ReadFull(c, buf[:buf[ulen]])
					c.Write([]byte{1, 0})
				} else {
					c.Write([]byte{5, 0})
				}
				io.ReadFull(c, buf[:5]) // VER CMD RSV ATYP LEN (domain)
				io.ReadFull(c, buf[:int(buf[4])+2])
				c.Write([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0, 80})
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String(), func() { ln.Close(); wg.Wait() }
}

// BenchmarkHandshake compares this package with golang.org/x/net/proxy
// over the same loopback gateway; each op dials, handshakes (domain
// target) and closes, under a timeout context as the engine uses. Results: docs/BENCHMARKS.md.
func BenchmarkHandshake(b *testing.B) {
	for _, auth := range []bool{false, true} {
		name := "noauth"
		var a *Auth
		var xa *proxy.Auth
		if auth {
			name = "rfc1929"
			a = &Auth{User: "gwuser", Password: "gwpass"}
			xa = &proxy.Auth{User: a.User, Password: a.Password}
		}
		b.Run("own/"+name, func(b *testing.B) {
			addr, stop := benchGateway(b, auth)
			defer stop()
			ctx := context.Background()
			var d net.Dialer
			b.ReportAllocs()
			for b.Loop() {
				octx, cancel := context.WithTimeout(ctx, 5*time.Second)
				c, err := d.DialContext(octx, "tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				if err := Connect(octx, c, "origin.example", 443, a); err != nil {
					b.Fatal(err)
				}
				c.Close()
				cancel()
			}
		})
		b.Run("xnetproxy/"+name, func(b *testing.B) {
			addr, stop := benchGateway(b, auth)
			defer stop()
			d, err := proxy.SOCKS5("tcp", addr, xa, &net.Dialer{})
			if err != nil {
				b.Fatal(err)
			}
			cd := d.(proxy.ContextDialer)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				octx, cancel := context.WithTimeout(ctx, 5*time.Second)
				c, err := cd.DialContext(octx, "tcp", "origin.example:443")
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
				cancel()
			}
		})
	}
}
