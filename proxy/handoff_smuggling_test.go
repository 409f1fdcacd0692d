package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// manyServer serves every accepted connection with fn until the test ends.
func manyServer(t *testing.T, fn func(net.Conn)) string {
	return testkit.ServeConns(t, func(c net.Conn) { defer c.Close(); fn(c) })
}

// TestOwnEndpointBodySmuggling: a request for the proxy's own endpoints whose
// body (unread by the handler, malformed, or refused by net/http) holds an
// absolute-form request never makes the proxy forward that request: the
// keep-alive of own endpoints resumes only at the real request boundary
// (SPEC HTTP-5b, HTTP-5).
func TestOwnEndpointBodySmuggling(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	oaddr := manyServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			req.Body.Close()
			mu.Lock()
			paths = append(paths, req.URL.Path)
			mu.Unlock()
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nSMUGGLED"))
		}
	})
	addr, _ := proxytest.Start(t, New, Config{Handler: ownHandler(nil, nil), LoopbackDirect: true})
	smug := "GET http://" + oaddr + "/smuggled HTTP/1.1\r\nHost: " + oaddr + "\r\n\r\n"
	big := smug + strings.Repeat("x", 300<<10)
	chunk := func(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }
	for _, tc := range []struct{ name, req string }{
		{"unread-cl-body-small", "POST /own HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(smug)) + "\r\n\r\n" + smug},
		{"unread-cl-body-big", "POST /own HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n" + big},
		{"unread-chunked-small", "POST /own HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(smug) + "0\r\n\r\n"},
		{"unread-chunked-big", "POST /own HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(big) + "0\r\n\r\n"},
		{"chunk-overflow", "POST /own HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff1\r\n" + smug},
		{"chunk-size-short", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n0\r\n\r\n"},
		{"chunk-lf-only", "POST /own HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\n0\n\n"},
		{"trailer-smuggle", "POST /own HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: 1\r\n\r\n"},
		{"expect-unread", "POST /own HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: " + strconv.Itoa(len(smug)) + "\r\n\r\n" + smug},
		{"expect-other", "POST /own HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: " + strconv.Itoa(len(smug)) + "\r\n\r\n" + smug},
		{"no-host", "POST /own HTTP/1.1\r\nContent-Length: " + strconv.Itoa(len(smug)) + "\r\n\r\n" + smug},
		{"two-host", "POST /own HTTP/1.1\r\nHost: x\r\nHost: y\r\nContent-Length: " + strconv.Itoa(len(smug)) + "\r\n\r\n" + smug},
		{"bad-host", "POST /own HTTP/1.1\r\nHost: a b\r\nContent-Length: " + strconv.Itoa(len(smug)) + "\r\n\r\n" + smug},
		{"http10-cl", "POST /own HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: " + strconv.Itoa(len(smug)) + "\r\n\r\n" + smug},
		{"bad-target", "POST /own%zz HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(smug)) + "\r\n\r\n" + smug},
		{"star-target", "OPTIONS * HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(smug)) + "\r\n\r\n" + smug},
		{"huge-header-own", "POST /own HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20) + "\r\nContent-Length: " + strconv.Itoa(len(smug)) + "\r\n\r\n" + smug},
		{"cl-leading-zero", "POST /own HTTP/1.1\r\nHost: x\r\nContent-Length: 0" + strconv.Itoa(len(smug)) + "\r\n\r\n" + smug},
		{"cl-list", "POST /own HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(smug)) + ", " + strconv.Itoa(len(smug)) + "\r\n\r\n" + smug},
		{"cl-two-lines", "POST /own HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(smug)) + "\r\nContent-Length: " + strconv.Itoa(len(smug)) + "\r\n\r\n" + smug},
		{"te-uppercase", "POST /own HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: CHUNKED\r\n\r\n" + chunk(smug) + "0\r\n\r\n"},
		{"te-cl-zero", "POST /own HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" + smug[:0]},
	} {
		t.Run("HTTP-5b/"+tc.name, func(t *testing.T) {
			mu.Lock()
			paths = nil
			mu.Unlock()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			// A request after the shape shows where the proxy thinks the
			// shape ended; its close ends the exchange.
			go c.Write([]byte(tc.req + "GET /own HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
			all, _ := io.ReadAll(c)
			mu.Lock()
			got := paths
			mu.Unlock()
			first := string(all)
			if i := strings.IndexByte(first, '\n'); i > 0 {
				first = first[:i]
			}
			t.Logf("%d bytes, first line %q, origin saw %v", len(all), first, got)
			if len(got) > 0 || strings.Contains(string(all), "SMUGGLED") {
				t.Errorf("smuggled request reached the origin: %v", got)
			}
		})
	}
}
