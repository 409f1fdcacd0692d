package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
)

// scriptOrigin answers the n-th request on a connection with script[n]
// (raw bytes; a script entry ending in "\x00close" is written without
// that suffix and the connection is closed). It reads each request whole
// first (http.ReadRequest) and records its head.
func scriptOrigin(t *testing.T, script []string) (addr string, got func() []*http.Request) {
	var mu sync.Mutex
	var reqs []*http.Request
	addr = manyServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for i := 0; i < len(script); i++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			mu.Lock()
			reqs = append(reqs, req)
			mu.Unlock()
			s, closing := strings.CutSuffix(script[i], "\x00close")
			io.WriteString(c, s)
			if closing {
				return
			}
		}
	})
	return addr, func() []*http.Request {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(reqs)
	}
}

// headerNames is the sorted set of a response's field names.
func headerNames(h http.Header) []string {
	var names []string
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// TestAnswersIntoReusedResponse: the answers of one client connection are
// read into one reused response and written with one head each; nothing
// of an earlier answer (fields, sizes, a gateway's failure answer) shows
// in a later one (SPEC HTTP-5, HTTP-5c).
func TestAnswersIntoReusedResponse(t *testing.T) {
	for _, fieldLen := range []int{10, 300} { // 300: the first head outgrows the writer (writeResponseHead)
		t.Run(fmt.Sprintf("HTTP-5/answers-read-into-one-response-carry-nothing-over/field=%d", fieldLen), func(t *testing.T) {
			var many strings.Builder
			for i := range 20 {
				fmt.Fprintf(&many, "X-Many-%d: %s\r\n", i, strings.Repeat("m", fieldLen))
			}
			script := []string{
				"HTTP/1.1 200 OK\r\nConnection: X-Hop\r\nX-Hop: h\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n" + many.String() +
					"Transfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n3;ext=1\r\nabc\r\n0\r\nX-T: t\r\n\r\n",
				"HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Two: 2\r\n\r\nok",
				"HTTP/1.1 204 No Content\r\nX-Three: 3\r\n\r\n",
				"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nX-Head: 1\r\n\r\n", // to a HEAD
				"HTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\n\r\n",
				"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-Six: 6\r\n\r\nsix",
				"HTTP/1.1 200 OK\r\nX-Last: 1\r\nConnection: close\r\n\r\nuntil-close\x00close",
			}
			want := []struct {
				method string
				status int
				body   string
				names  []string
			}{
				{"GET", 200, "abc", nil}, // names checked below
				{"GET", 200, "ok", []string{"Content-Length", "X-Two"}},
				{"GET", 204, "", []string{"X-Three"}},
				{"HEAD", 200, "", []string{"Content-Length", "X-Head"}},
				{"GET", 304, "", []string{"Etag"}},
				{"GET", 200, "six", []string{"Content-Length", "X-Six"}},
				{"GET", 200, "until-close", []string{"X-Last"}}, // Connection: close is resp.Close
			}
			o, got := scriptOrigin(t, script)
			addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
			c := proxytest.Dial(t, addr)
			br := bufio.NewReader(c)
			closeSeen := false
			for i, w := range want {
				fmt.Fprintf(c, "%s http://%s/r%d HTTP/1.1\r\nHost: %s\r\n\r\n", w.method, o, i, o)
				resp, body := proxytest.ReadResponse(t, br, w.method)
				if resp.StatusCode != w.status || body != w.body {
					t.Fatalf("answer %d: %d %q, want %d %q", i, resp.StatusCode, body, w.status, w.body)
				}
				names := headerNames(resp.Header)
				closeSeen = resp.Close
				if i == 0 {
					if len(resp.Header["Set-Cookie"]) != 2 || resp.Header.Get("X-Many-19") != strings.Repeat("m", fieldLen) ||
						resp.Header.Get("X-Hop") != "" || resp.Header.Get("Trailer") != "" || resp.Header.Get("X-T") != "" || len(resp.Trailer) != 0 {
						t.Fatalf("answer 0: %v trailer %v", resp.Header, resp.Trailer)
					}
					continue
				}
				if !slices.Equal(names, w.names) {
					t.Fatalf("answer %d has fields %v, want %v (%v)", i, names, w.names, resp.Header)
				}
				if w.names[0] == "Content-Length" && resp.ContentLength != int64(len(w.body)) && w.method != "HEAD" {
					t.Fatalf("answer %d: Content-Length %d", i, resp.ContentLength)
				}
			}
			// The close-delimited body went out chunked (or with
			// Connection: close): a kept connection takes another request,
			// on a new upstream connection, whose answer is the script's
			// first again.
			if closeSeen {
				if _, err := br.ReadByte(); err != io.EOF {
					t.Fatalf("Connection: close but the connection stays open: %v", err)
				}
			} else {
				fmt.Fprintf(c, "GET http://%s/again HTTP/1.1\r\nHost: %s\r\n\r\n", o, o)
				resp, body := proxytest.ReadResponse(t, br, "GET")
				if resp.StatusCode != 200 || body != "abc" || len(resp.Header["Set-Cookie"]) != 2 || resp.Header.Get("X-Last") != "" {
					t.Fatalf("after the close-delimited answer: %d %q %v", resp.StatusCode, body, resp.Header)
				}
			}
			if n := len(got()); n < len(want) {
				t.Fatalf("origin saw %d requests", n)
			}
		})
	}

	t.Run("HTTP-5/answer-heads-around-the-client-writer-size", func(t *testing.T) {
		// The client connection's writer holds 4096 bytes: heads from
		// well under to well over it, one after another on one
		// connection, each exact, an unknown status's reason too (appendResponseHead's bound, then
		// writeResponseHead's pieces).
		var script []string
		var pads []int
		for pad := 3800; pad <= 4400; pad += 23 {
			pads = append(pads, pad)
			body := fmt.Sprintf("body-%d", pad)
			script = append(script, fmt.Sprintf("HTTP/1.1 299 %s\r\nX-Pad: %s\r\nContent-Length: %d\r\n\r\n%s", strings.Repeat("R", pad%50+1), strings.Repeat("p", pad), len(body), body))
		}
		o, _ := scriptOrigin(t, script)
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		for i, pad := range pads {
			fmt.Fprintf(c, "GET http://%s/%d HTTP/1.1\r\nHost: %s\r\n\r\n", o, i, o)
			resp, body := proxytest.ReadResponse(t, br, "GET")
			if resp.StatusCode != 299 || body != fmt.Sprintf("body-%d", pad) || resp.Header.Get("X-Pad") != strings.Repeat("p", pad) ||
				resp.Status != "299 "+strings.Repeat("R", pad%50+1) {
				t.Fatalf("pad %d: %q %q, X-Pad of %d bytes", pad, resp.Status, body, len(resp.Header.Get("X-Pad")))
			}
		}
	})

	t.Run("HTTP-5c/a-gateways-failure-answer-leaves-nothing-in-the-next-answer", func(t *testing.T) {
		var fields strings.Builder
		for i := range 30 {
			fmt.Fprintf(&fields, "X-Gw1-%d: %s\r\n", i, strings.Repeat("f", 40))
		}
		fail := "HTTP/1.1 503 Service Unavailable\r\nServer: squid\r\n" + fields.String() + "Content-Length: 9\r\n\r\ngw1 down\n"
		gw1 := manyServer(t, func(c net.Conn) {
			br := bufio.NewReader(c)
			for {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, fail)
			}
		})
		gw2 := manyServer(t, func(c net.Conn) {
			br := bufio.NewReader(c)
			for {
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				if req.URL.Host == "both-down.test" {
					io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nX-Gw2: 1\r\nContent-Length: 9\r\n\r\ngw2 down\n")
					continue
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Gw2: 1\r\nContent-Length: 2\r\n\r\ng2")
			}
		})
		addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://"+gw1, "http://"+gw2), Cooldown: time.Minute})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		for i, host := range []string{"one.test", "both-down.test", "two.test"} {
			fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
			resp, body := proxytest.ReadResponse(t, br, "GET")
			wantStatus, wantBody := 200, "g2"
			if host == "both-down.test" {
				wantStatus, wantBody = 502, "gw2 down\n"
			}
			if resp.StatusCode != wantStatus || body != wantBody || resp.Header.Get("X-Gw2") != "1" || resp.Header.Get("X-Gw1-0") != "" || resp.Header.Get("Server") != "" {
				t.Fatalf("request %d (%s): %d %q %v", i, host, resp.StatusCode, body, resp.Header)
			}
		}
	})
}
