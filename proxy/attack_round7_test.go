package proxy

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testworld"
)

// Attack round seven: this session's plain-request changes (answers read
// into one Response per client connection, heads appended in one Write,
// the request head's fields not checked twice, the target's parse memo,
// the head parser's line tracking) with real sockets on 127.0.0.1.

// scriptOrigin7 answers the n-th request on a connection with script[n]
// (raw bytes; a script entry ending in "\x00close" is written without
// that suffix and the connection is closed). It reads each request whole
// first (http.ReadRequest) and records its head.
func scriptOrigin7(t *testing.T, script []string) (addr string, got func() []*http.Request) {
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

// fieldNames7 is the sorted set of a response's field names.
func fieldNames7(h http.Header) []string {
	var names []string
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func TestAttackRound7Answers(t *testing.T) {
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
			o, got := scriptOrigin7(t, script)
			addr, _ := startProxy(t, Config{LoopbackDirect: true})
			c := dialProxy(t, addr)
			br := bufio.NewReader(c)
			closeSeen := false
			for i, w := range want {
				fmt.Fprintf(c, "%s http://%s/r%d HTTP/1.1\r\nHost: %s\r\n\r\n", w.method, o, i, o)
				resp, body := readResponse(t, br, w.method)
				if resp.StatusCode != w.status || body != w.body {
					t.Fatalf("answer %d: %d %q, want %d %q", i, resp.StatusCode, body, w.status, w.body)
				}
				names := fieldNames7(resp.Header)
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
				resp, body := readResponse(t, br, "GET")
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
		o, _ := scriptOrigin7(t, script)
		addr, _ := startProxy(t, Config{LoopbackDirect: true})
		c := dialProxy(t, addr)
		br := bufio.NewReader(c)
		for i, pad := range pads {
			fmt.Fprintf(c, "GET http://%s/%d HTTP/1.1\r\nHost: %s\r\n\r\n", o, i, o)
			resp, body := readResponse(t, br, "GET")
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
		addr, _ := startProxy(t, Config{Candidates: gateways(t, false, "http://"+gw1, "http://"+gw2), Cooldown: time.Minute})
		c := dialProxy(t, addr)
		br := bufio.NewReader(c)
		for i, host := range []string{"one.test", "both-down.test", "two.test"} {
			fmt.Fprintf(c, "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
			resp, body := readResponse(t, br, "GET")
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

// rawHead7 reads one request head from br as its lines (no CRLF), and a
// body of the Content-Length it names.
func rawHead7(br *bufio.Reader) (lines []string, body string, err error) {
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

func TestAttackRound7RequestHead(t *testing.T) {
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
					lines, body, err := rawHead7(br)
					if err != nil {
						return
					}
					got <- seen{lines, body}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			})
			addr, _ := startProxy(t, Config{Candidates: gateways(t, false, "http://us%20er:p%40ss@"+gw)})
			c := dialProxy(t, addr)
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
				if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || body != "ok" {
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
		addr, _ := startProxy(t, Config{LoopbackDirect: true})
		c := dialProxy(t, addr)
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
			resp, body := readResponse(t, br, "GET")
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
			addr, _ := startProxy(t, Config{LoopbackDirect: true})
			c := dialProxy(t, addr)
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
		addr, _ := startProxy(t, Config{LoopbackDirect: true})
		c := dialProxy(t, addr)
		c.(*net.TCPConn).SetNoDelay(true)
		br := bufio.NewReader(c)
		raw := fmt.Sprintf("PATCH http://%s/split?x=1 HTTP/1.1\r\nHost: %s\r\nX-A: 1\r\nX-Empty:\r\nX-Tab:\tv\t\r\nConnection: keep-alive, X-Drop\r\nX-Drop: d\r\n"+
			"Transfer-Encoding: chunked\r\n\r\n3;ext=\"q\"\r\nabc\r\n2\r\nde\r\n0\r\nX-Tr: 1\r\n\r\n", o.Addr, o.Addr)
		for i := range len(raw) {
			if _, err := c.Write([]byte{raw[i]}); err != nil {
				t.Fatal(err)
			}
		}
		if resp, body := readResponse(t, br, "PATCH"); resp.StatusCode != 200 || body != o.Greeting() {
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

// TestAttackRound7Tunnels: many new tunnels at once while the first
// gateway refuses connections and the second accepts and never answers
// (SPEC CON-1, ORD-2, ORD-5): every tunnel opens through the third and
// carries its bytes both ways with its half-close; once the two are in
// cooldown a new tunnel does not wait for the silent one.
func TestAttackRound7Tunnels(t *testing.T) {
	t.Run("ORD-2/many-new-tunnels-with-a-dead-and-a-blackholed-gateway", func(t *testing.T) {
		dead, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		deadAddr := dead.Addr().String()
		dead.Close()
		silent := manyServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
		var mu sync.Mutex
		opened := 0
		live := manyServer(t, func(c net.Conn) {
			br := bufio.NewReader(c)
			h, err := http.ReadRequest(br)
			if err != nil || h.Method != http.MethodConnect {
				return
			}
			mu.Lock()
			opened++
			mu.Unlock()
			io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
			got, _ := io.ReadAll(br)
			io.WriteString(c, "got:"+string(got))
		})
		const connectTimeout = 3 * time.Second
		addr, _ := startProxy(t, Config{Candidates: gateways(t, false, "http://"+deadAddr, "http://"+silent, "http://"+live),
			ConnectTimeout: connectTimeout, Cooldown: time.Minute})
		const n = 32
		errs := make(chan error, n)
		for i := range n {
			go func() {
				errs <- func() error {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						return err
					}
					defer c.Close()
					c.SetDeadline(time.Now().Add(30 * time.Second))
					fmt.Fprintf(c, "CONNECT t%d.test:443 HTTP/1.1\r\nHost: t%d.test:443\r\n\r\n", i, i)
					br := bufio.NewReader(c)
					line, err := br.ReadString('\n')
					if err != nil || line != "HTTP/1.1 200 Connection established\r\n" {
						return fmt.Errorf("tunnel %d: %q %v", i, line, err)
					}
					if l, err := br.ReadString('\n'); err != nil || l != "\r\n" {
						return fmt.Errorf("tunnel %d: %q %v", i, l, err)
					}
					msg := fmt.Sprintf("tunnel-%d", i)
					io.WriteString(c, msg)
					c.(*net.TCPConn).CloseWrite()
					got, err := io.ReadAll(br)
					if err != nil || string(got) != "got:"+msg {
						return fmt.Errorf("tunnel %d: %q %v", i, got, err)
					}
					return nil
				}()
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		mu.Lock()
		if opened != n {
			t.Errorf("the live gateway opened %d tunnels, want %d", opened, n)
		}
		mu.Unlock()
		start := time.Now()
		c := dialProxy(t, addr)
		io.WriteString(c, "CONNECT after.test:443 HTTP/1.1\r\nHost: after.test:443\r\n\r\n")
		br := bufio.NewReader(c)
		if code, _ := readConnectReply(t, br); code != 200 {
			t.Fatalf("after: %d", code)
		}
		if d := time.Since(start); d >= connectTimeout {
			t.Fatalf("a tunnel after the cooldowns took %v: it waited for a gateway in cooldown", d)
		}
	})
}

// TestAttackRound7Expect: a client that waits for 100 Continue before its
// body, on a connection whose earlier requests reused the head and the
// answer (SPEC HTTP-2: Expect: 100-continue must not deadlock).
func TestAttackRound7Expect(t *testing.T) {
	t.Run("HTTP-2/expect-100-continue-after-reused-requests", func(t *testing.T) {
		o := testworld.NewNamedOrigin(t, "O")
		addr, _ := startProxy(t, Config{LoopbackDirect: true})
		c := dialProxy(t, addr)
		br := bufio.NewReader(c)
		for i := range 2 {
			fmt.Fprintf(c, "GET http://%s/g%d HTTP/1.1\r\nHost: %s\r\nX-Before: %d\r\n\r\n", o.Addr, i, o.Addr, i)
			readResponse(t, br, "GET")
		}
		fmt.Fprintf(c, "PUT http://%s/put HTTP/1.1\r\nHost: %s\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", o.Addr, o.Addr)
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
			t.Fatalf("waiting for 100 Continue: %q %v", line, err)
		}
		if l, err := br.ReadString('\n'); err != nil || l != "\r\n" {
			t.Fatalf("100 Continue head: %q %v", l, err)
		}
		io.WriteString(c, "hello")
		if resp, body := readResponse(t, br, "PUT"); resp.StatusCode != 200 || body != o.Greeting() {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		rs := o.Requests()
		if len(rs) != 3 || string(rs[2].Body) != "hello" || rs[2].Header.Get("Expect") != "" || rs[2].Header.Get("X-Before") != "" {
			t.Fatalf("origin saw %d requests, the last %v %q", len(rs), rs[len(rs)-1].Header, rs[len(rs)-1].Body)
		}
	})
}
