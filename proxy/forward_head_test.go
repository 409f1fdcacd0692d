package proxy

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
)

// readRawAnswer reads one request head from br as its lines (no CRLF), and a
// body of the Content-Length it names.
func readRawAnswer(br *bufio.Reader) (lines []string, body string, err error) {
	n := 0
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return nil, "", err
		}
		l = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
		if l == "" {
			break
		}
		lines = append(lines, l)
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, "Content-Length") {
			fmt.Sscan(strings.TrimSpace(v), &n)
		}
	}
	b := make([]byte, n)
	_, err = io.ReadFull(br, b)
	return lines, string(b), err
}

// TestRequestHeadsOnReusedConnection: the head sent upstream carries one
// Proxy-Authorization (the gateway's) and no hop-by-hop field however
// long it is; targets on one connection reach their own origins; a
// request split at every byte is forwarded whole, and a smuggling shape
// split at every byte is refused (SPEC GW-4, HTTP-5, HTTP-5b).
func TestRequestHeadsOnReusedConnection(t *testing.T) {
	type seen struct {
		lines []string
		body  string
	}
	for _, pad := range []int{0, 5000} { // 5000: the head outgrows the upstream writer (writeHeadPieces)
		t.Run(fmt.Sprintf("GW-4/one-proxy-authorization-the-gateways-and-no-hop-by-hop/pad=%d", pad), func(t *testing.T) {
			got := make(chan seen, 8)
			gw := manyServer(t, func(c net.Conn) {
				br := bufio.NewReader(c)
				for {
					lines, body, err := readRawAnswer(br)
					if err != nil {
						return
					}
					got <- seen{lines, body}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			})
			addr, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, "http://us%20er:p%40ss@"+gw)})
			c := proxytest.Dial(t, addr)
			br := bufio.NewReader(c)
			padField := ""
			if pad > 0 {
				padField = "X-Pad: " + strings.Repeat("p", pad) + "\r\n"
			}
			reqs := []string{
				"GET http://example.test/one?q=1 HTTP/1.1\r\nHost: example.test\r\nProxy-Authorization: Basic Y2xpZW50OnNlY3JldA==\r\n" +
					"Connection: X-Secret, keep-alive\r\nX-Secret: s\r\nProxy-Connection: keep-alive\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\n" +
					"Upgrade: h2c\r\nX-Keep: k\r\n" + padField + "\r\n",
				"POST http://example.test/two HTTP/1.1\r\nHost: example.test\r\nX-Secret: 2\r\nContent-Length: 3\r\n" + padField + "\r\nabc",
				"PUT http://example.test/three HTTP/1.1\r\nHost: example.test\r\nproxy-authorization: Basic eDp5\r\nTransfer-Encoding: chunked\r\n" + padField + "\r\n2\r\nxy\r\n0\r\n\r\n",
			}
			for i, r := range reqs {
				io.WriteString(c, r)
				if resp, body := proxytest.ReadResponse(t, br, "GET"); resp.StatusCode != 200 || body != "ok" {
					t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
				}
			}
			auth := "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("us er:p@ss"))
			targets := []string{"GET http://example.test/one?q=1 HTTP/1.1", "POST http://example.test/two HTTP/1.1", "PUT http://example.test/three HTTP/1.1"}
			for i := range reqs {
				s := <-got
				if s.lines[0] != targets[i] || s.lines[1] != "Host: example.test" {
					t.Fatalf("request %d starts %q", i, s.lines[:2])
				}
				var auths, hops []string
				has := map[string]string{}
				for _, l := range s.lines[1:] {
					k, v, _ := strings.Cut(l, ": ")
					has[strings.ToLower(k)] = v
					switch strings.ToLower(k) {
					case "proxy-authorization":
						auths = append(auths, l)
					case "connection", "proxy-connection", "keep-alive", "te", "upgrade", "trailer":
						hops = append(hops, l)
					}
				}
				if len(auths) != 1 || auths[0] != auth || len(hops) != 0 {
					t.Fatalf("request %d: credentials %q, hop-by-hop %q", i, auths, hops)
				}
				if pad > 0 && has["x-pad"] != strings.Repeat("p", pad) {
					t.Fatalf("request %d: X-Pad of %d bytes", i, len(has["x-pad"]))
				}
				switch i {
				case 0:
					if _, ok := has["x-secret"]; ok || has["x-keep"] != "k" {
						t.Fatalf("request 0 fields %v", has)
					}
				case 1:
					// The field the previous head's Connection named is
					// end-to-end in this one.
					if has["x-secret"] != "2" || has["content-length"] != "3" || s.body != "abc" {
						t.Fatalf("request 1 fields %v body %q", has, s.body)
					}
				case 2:
					if _, ok := has["x-secret"]; ok || has["content-length"] != "2" || s.body != "xy" {
						t.Fatalf("request 2 fields %v body %q", has, s.body)
					}
				}
			}
		})
	}

	t.Run("HTTP-5b/targets-on-one-connection-reach-their-origins", func(t *testing.T) {
		// The connection's target keeps its last authority's parse
		// (ORD-3): alternating authorities, spellings and ports.
		a := testworld.NewNamedOrigin(t, "A")
		b := testworld.NewNamedOrigin(t, "B")
		_, ap, _ := net.SplitHostPort(a.Addr)
		_, bp, _ := net.SplitHostPort(b.Addr)
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		br := bufio.NewReader(c)
		steps := []struct {
			authority string
			origin    *testworld.Origin
		}{
			{"127.0.0.1:" + ap, a}, {"127.0.0.1:" + bp, b}, {"127.0.0.1:" + bp, b}, {"localhost:" + ap, a},
			{"LOCALHOST:" + bp, b}, {"127.0.0.1:" + ap, a}, {"[::ffff:127.0.0.1]:" + bp, b}, {"127.0.0.1:0" + ap, a},
		}
		for i, s := range steps {
			fmt.Fprintf(c, "GET http://%s/s%d HTTP/1.1\r\nHost: %s\r\n\r\n", s.authority, i, s.authority)
			resp, body := proxytest.ReadResponse(t, br, "GET")
			if resp.StatusCode != 200 || body != s.origin.Greeting() {
				t.Fatalf("step %d (%s): %d %q", i, s.authority, resp.StatusCode, body)
			}
		}
		for _, o := range []*testworld.Origin{a, b} {
			for _, r := range o.Requests() {
				i := 0
				fmt.Sscanf(r.RequestURI, "/s%d", &i)
				if steps[i].origin != o {
					t.Errorf("%s reached the wrong origin", r.RequestURI)
				}
			}
		}
		if n := len(a.Requests()) + len(b.Requests()); n != len(steps) {
			t.Fatalf("origins saw %d requests, want %d", n, len(steps))
		}
	})

	// Smuggling shapes written one byte per write: the head parser,
	// which tracks where each line starts, sees the same fields.
	smuggle := []struct{ name, head string }{
		{"length-and-chunked", "POST http://%s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"chunked-then-length", "POST http://%s/ HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n"},
		{"conflicting-lengths", "POST http://%s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde"},
		{"length-list", "POST http://%s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: 4, 5\r\n\r\nabcde"},
		{"chunked-comma", "POST http://%s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: 4\r\nTransfer-Encoding: chunked,\r\n\r\n0\r\n\r\n"},
		{"obs-fold-te", "POST http://%s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: 4\r\nX-A: 1\r\n Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"bare-lf-te", "POST http://%s/ HTTP/1.1\r\nHost: %s\r\nContent-Length: 4\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
		{"space-before-colon", "POST http://%s/ HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding : chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n"},
	}
	for _, s := range smuggle {
		t.Run("HTTP-5/smuggling-shape-split-at-every-byte-is-refused/"+s.name, func(t *testing.T) {
			o := testworld.NewNamedOrigin(t, "O")
			addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
			c := proxytest.Dial(t, addr)
			c.(*net.TCPConn).SetNoDelay(true)
			raw := fmt.Sprintf(s.head, o.Addr, o.Addr)
			for i := range len(raw) {
				if _, err := c.Write([]byte{raw[i]}); err != nil {
					break // the proxy answered and closed early
				}
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != 400 && resp.StatusCode != 501 {
				t.Fatalf("status %d, want 400 or 501", resp.StatusCode)
			}
			if n := len(o.Requests()); n != 0 {
				t.Fatalf("origin saw %d requests", n)
			}
			if !endsWithin(c, 10*time.Second) {
				t.Fatal("connection stays open after a refused head")
			}
		})
	}
	t.Run("HTTP-5/a-request-split-at-every-byte-is-forwarded-whole", func(t *testing.T) {
		o := testworld.NewNamedOrigin(t, "O")
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		c.(*net.TCPConn).SetNoDelay(true)
		br := bufio.NewReader(c)
		raw := fmt.Sprintf("PATCH http://%s/split?x=1 HTTP/1.1\r\nHost: %s\r\nX-A: 1\r\nX-Empty:\r\nX-Tab:\tv\t\r\nConnection: keep-alive, X-Drop\r\nX-Drop: d\r\n"+
			"Transfer-Encoding: chunked\r\n\r\n3;ext=\"q\"\r\nabc\r\n2\r\nde\r\n0\r\nX-Tr: 1\r\n\r\n", o.Addr, o.Addr)
		for i := range len(raw) {
			if _, err := c.Write([]byte{raw[i]}); err != nil {
				t.Fatal(err)
			}
		}
		if resp, body := proxytest.ReadResponse(t, br, "PATCH"); resp.StatusCode != 200 || body != o.Greeting() {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		rs := o.Requests()
		if len(rs) != 1 {
			t.Fatalf("origin saw %d requests", len(rs))
		}
		r := rs[0]
		if r.Method != "PATCH" || r.RequestURI != "/split?x=1" || string(r.Body) != "abcde" || r.Header.Get("X-A") != "1" ||
			r.Header.Get("X-Tab") != "v" || r.Header.Get("X-Drop") != "" || r.Header.Get("X-Tr") != "" || r.Header.Get("Connection") != "" {
			t.Fatalf("origin saw %s %s %q %v", r.Method, r.RequestURI, r.Body, r.Header)
		}
		if _, ok := r.Header["X-Empty"]; !ok {
			t.Fatalf("empty field lost: %v", r.Header)
		}
	})
}
