package proxy

import (
	"bufio"
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

func TestStreaming(t *testing.T) {
	for _, via := range []string{"direct", "gateway"} {
		t.Run("HTTP-4/sse-first-event-not-buffered-"+via, func(t *testing.T) {
			wrote := make(chan time.Time, 2)
			origin := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: one\n\n")
				w.(http.Flusher).Flush()
				wrote <- time.Now()
				select { // the pause is the behaviour under test
				case <-time.After(2 * time.Second):
				case <-r.Context().Done():
					return
				}
				io.WriteString(w, "data: two\n\n")
				w.(http.Flusher).Flush()
				wrote <- time.Now()
			}))
			cfg := Config{LoopbackDirect: true}
			if via == "gateway" {
				cfg = Config{Candidates: proxytest.Gateways(t, false, testworld.NewGateway(t).Addr)}
			}
			addr, _ := proxytest.Start(t, New, cfg)
			c := proxytest.Dial(t, addr)
			br := bufio.NewReader(c)
			fmt.Fprintf(c, "GET %s/events HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", origin.URL, origin.Addr)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%v %v", resp, err)
			}
			defer resp.Body.Close()
			rd := bufio.NewReader(resp.Body)
			for i, want := range []string{"data: one", "data: two"} {
				line, err := rd.ReadString('\n')
				got := time.Now()
				if err != nil || strings.TrimSpace(line) != want {
					t.Fatalf("event %d: %q %v", i, line, err)
				}
				rd.ReadString('\n')
				sent := <-wrote
				if lag := got.Sub(sent); lag > time.Second {
					t.Fatalf("event %d reached the client %v after the origin wrote it (buffered)", i, lag)
				}
			}
		})
	}

	t.Run("HTTP-4/http10-client-gets-close-delimited-stream", func(t *testing.T) {
		origin := testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "part1 ")
			w.(http.Flusher).Flush()
			io.WriteString(w, "part2")
		}))
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		fmt.Fprintf(c, "GET %s/ HTTP/1.0\r\nHost: %s\r\n\r\n", origin.URL, origin.Addr)
		all, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		s := string(all)
		if !strings.HasSuffix(s, "\r\n\r\npart1 part2") || strings.Contains(strings.ToLower(s), "transfer-encoding") {
			t.Fatalf("answer %q", s)
		}
	})
}

func TestTargetAndHeaders(t *testing.T) {
	t.Run("HTTP-1/request-target-forwarded-byte-for-byte", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		lines := make(chan string, 16)
		gw := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
			br := bufio.NewReader(c)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				lines <- strings.TrimRight(line, "\r\n")
				for { // skip the header
					if l, err := br.ReadString('\n'); err != nil || l == "\r\n" {
						break
					}
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
			}
		})
		direct, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		viaGW, _ := proxytest.Start(t, New, Config{Candidates: proxytest.Gateways(t, false, gw)})
		for _, p := range []string{"/a%2Fb/c;x=1?q=%7e&r=a+b", "/a|b{c}", "?only=query", "/%7E/\u00fc", ""} {
			raw := "GET " + origin.URL + p + " HTTP/1.1\r\nHost: " + origin.Addr + "\r\n\r\n"
			want := p
			if p == "" || p[0] == '?' {
				want = "/" + p
			}
			if resp, _ := proxytest.Send(t, direct, raw); resp.StatusCode != 200 {
				t.Fatalf("%q: %d", p, resp.StatusCode)
			}
			seen := origin.Requests()
			if got := seen[len(seen)-1].RequestURI; got != want {
				t.Fatalf("origin saw %q, want %q", got, want)
			}
			if resp, _ := proxytest.Send(t, viaGW, raw); resp.StatusCode != 200 {
				t.Fatalf("%q via gateway: %d", p, resp.StatusCode)
			}
			if got, w := <-lines, "GET "+origin.URL+want+" HTTP/1.1"; got != w {
				t.Fatalf("gateway saw %q, want %q", got, w)
			}
		}
	})

	t.Run("HTTP-5/no-user-agent-invented-host-is-target", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		proxytest.Send(t, addr, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: wrong.example\r\n\r\n")
		proxytest.Send(t, addr, "GET "+origin.URL+"/ HTTP/1.1\r\nHost: wrong.example\r\nUser-Agent: agent/1\r\n\r\n")
		seen := origin.Requests()
		if _, ok := seen[0].Header["User-Agent"]; ok {
			t.Fatalf("User-Agent invented: %q", seen[0].Header.Get("User-Agent"))
		}
		if seen[1].Header.Get("User-Agent") != "agent/1" || seen[0].Host != origin.Addr {
			t.Fatalf("UA %q Host %q", seen[1].Header.Get("User-Agent"), seen[0].Host)
		}
	})

	t.Run("HTTP-1/userinfo-and-https-targets-refused", func(t *testing.T) {
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		for _, target := range []string{"http://u:p@127.0.0.1:1/", "https://127.0.0.1:1/", "ftp://127.0.0.1/"} {
			if resp, _ := proxytest.Send(t, addr, "GET "+target+" HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 400 {
				t.Fatalf("%s: %d", target, resp.StatusCode)
			}
		}
	})
}
