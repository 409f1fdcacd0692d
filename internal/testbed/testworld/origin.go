// Package testworld builds a loopback "world" for tests of the proxy, the
// launcher and the commands: origins that answer a known body, upstream
// HTTP proxies ("gateways") that can be told to refuse, blackhole, reset,
// answer a status or delay, and addresses where nothing listens or nothing
// answers. Everything listens on 127.0.0.1:0 and is closed by t.Cleanup;
// Close waits for every goroutine it started, so goleak stays clean.
//
// Nothing here resolves a name or leaves loopback (SPEC "Test safety").
package testworld

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Seen is one request as an Origin received it.
type Seen struct {
	Method     string
	Host       string // the Host header (r.Host)
	RequestURI string // as sent on the request line (origin-form through a proxy)
	Header     http.Header
	Body       []byte
}

// Origin is an HTTP (or HTTPS) server on 127.0.0.1 that records every
// request it receives. By default it answers 200 with the body
// "origin NAME\n" (see Greeting).
type Origin struct {
	// URL is "http://127.0.0.1:PORT" (or "https://…" for NewTLSOrigin).
	URL string
	// Addr is "127.0.0.1:PORT".
	Addr string
	// Name appears in the default answer; it defaults to Addr.
	Name string
	// CertPool trusts the server's certificate (NewTLSOrigin only; nil
	// otherwise). The certificate is valid for 127.0.0.1, ::1 and
	// example.com.
	CertPool *x509.CertPool
	// CertPEM is the same certificate PEM-encoded, for curl --cacert.
	CertPEM []byte
	// Server is the underlying test server.
	Server *httptest.Server

	closing   chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	seen      []Seen
}

// NewOrigin starts a plain HTTP origin answering 200 "origin ADDR\n".
func NewOrigin(t testing.TB) *Origin { return newOrigin(t, "", nil, false) }

// NewNamedOrigin is NewOrigin answering 200 "origin NAME\n".
func NewNamedOrigin(t testing.TB, name string) *Origin { return newOrigin(t, name, nil, false) }

// NewOriginHandler starts a plain HTTP origin served by h (requests are
// still recorded; h sees the same body). A handler that blocks should also
// watch r.Context() or Closing(): at cleanup every connection is closed
// before the server waits for its handlers.
func NewOriginHandler(t testing.TB, h http.Handler) *Origin { return newOrigin(t, "", h, false) }

// NewTLSOrigin starts an HTTPS origin (httptest.NewTLSServer's certificate)
// answering 200 "origin ADDR\n"; trust it through CertPool or
// o.Server.Client().
func NewTLSOrigin(t testing.TB) *Origin { return newOrigin(t, "", nil, true) }

// NewTLSOriginHandler is NewTLSOrigin served by h.
func NewTLSOriginHandler(t testing.TB, h http.Handler) *Origin { return newOrigin(t, "", h, true) }

func newOrigin(t testing.TB, name string, h http.Handler, tls bool) *Origin {
	t.Helper()
	o := &Origin{closing: make(chan struct{})}
	srv := httptest.NewUnstartedServer(nil)
	o.Addr = srv.Listener.Addr().String()
	o.Name = name
	if o.Name == "" {
		o.Name = o.Addr
	}
	if h == nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, o.Greeting())
		})
	}
	srv.Config.Handler = o.record(h)
	if tls {
		srv.StartTLS()
		o.CertPool = x509.NewCertPool()
		o.CertPool.AddCert(srv.Certificate())
		o.CertPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	} else {
		srv.Start()
	}
	o.Server, o.URL = srv, srv.URL
	t.Cleanup(o.Close)
	return o
}

// record wraps h so every request is appended to o.seen before h runs.
func (o *Origin) record(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		o.mu.Lock()
		o.seen = append(o.seen, Seen{Method: r.Method, Host: r.Host, RequestURI: r.RequestURI,
			Header: r.Header.Clone(), Body: body})
		o.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// Greeting is the default answer body: "origin NAME\n".
func (o *Origin) Greeting() string { return fmt.Sprintf("origin %s\n", o.Name) }

// Count is the number of requests received so far.
func (o *Origin) Count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.seen)
}

// Requests returns a copy of the requests received so far, in arrival order.
func (o *Origin) Requests() []Seen {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Seen(nil), o.seen...)
}

// Closing is closed when the origin starts shutting down; long-running
// handlers select on it.
func (o *Origin) Closing() <-chan struct{} { return o.closing }

// Close closes every client connection and the listener, and waits for the
// handlers. It is registered with t.Cleanup; calling it again is a no-op.
func (o *Origin) Close() {
	o.closeOnce.Do(func() {
		close(o.closing)
		o.Server.CloseClientConnections()
		o.Server.Close()
	})
}
