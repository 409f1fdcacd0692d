package proxy

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"golang.org/x/net/http/httpguts"
)

// rawHeadOrigin answers one request per connection with "ok" and sends
// the request head it received, as raw bytes, on the returned channel.
func rawHeadOrigin(t *testing.T) (string, <-chan string) {
	heads := make(chan string, 4)
	addr := proxytest.TCPServer(t, "127.0.0.1:0", func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		var head strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			head.WriteString(line)
			if line == "\r\n" {
				break
			}
		}
		heads <- head.String()
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
	})
	return addr, heads
}

func TestOutgoingHeader(t *testing.T) {
	t.Run("HTTP-5/end-to-end-fields-in-client-order-hop-by-hop-dropped", func(t *testing.T) {
		origin, heads := rawHeadOrigin(t)
		addr, _ := proxytest.Start(t, New, Config{LoopbackDirect: true})
		c := proxytest.Dial(t, addr)
		fmt.Fprintf(c, "GET http://%s/p HTTP/1.1\r\nx-second: b\r\nHost: %s\r\nX-First: a\r\nConnection: x-hop, keep-alive\r\n"+
			"x-hop: 1\r\nx-second: c\r\nProxy_Authorization: Basic eDp5\r\nTE: trailers\r\nVia: 1.1 client-side\r\n"+
			"Expect: 100-continue\r\nx-last: d\r\n\r\n", origin, origin)
		resp, body := proxytest.ReadResponse(t, bufio.NewReader(c), "GET")
		if resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("status %d body %q", resp.StatusCode, body)
		}
		head := <-heads
		lines := strings.Split(strings.TrimSuffix(head, "\r\n\r\n"), "\r\n")
		// Host first, then the client's end-to-end fields as sent (names
		// as received, repeated fields in place), then our Via entry.
		want := []string{"GET /p HTTP/1.1", "Host: " + origin, "x-second: b", "X-First: a", "x-second: c",
			"Via: 1.1 client-side", "x-last: d"}
		if len(lines) != len(want)+1 || !strings.HasPrefix(lines[len(want)], "Via: 1.1 ") {
			t.Fatalf("origin got head\n%s\nwant %q then our Via", head, want)
		}
		for i, w := range want {
			if lines[i] != w {
				t.Fatalf("line %d = %q, want %q; head\n%s", i, lines[i], w, head)
			}
		}
	})
}

// BenchmarkOutgoingHeader is the request side's header work per plain
// request on an agent's head of 22 fields, three of them named
// by Connection.
func BenchmarkOutgoingHeader(b *testing.B) {
	var raw strings.Builder
	raw.WriteString("POST http://api.example.test/v1/messages HTTP/1.1\r\nHost: api.example.test\r\n")
	raw.WriteString("Connection: keep-alive, X-Hop-A, X-Hop-B, X-Hop-C\r\nX-Hop-A: 1\r\nX-Hop-B: 2\r\nX-Hop-C: 3\r\n")
	raw.WriteString("Proxy-Connection: keep-alive\r\nUser-Agent: claude-cli/2.1.197 (external, sdk-cli)\r\nAccept: application/json\r\n")
	raw.WriteString("Content-Type: application/json\r\nContent-Length: 2\r\nanthropic-version: 2023-06-01\r\n")
	raw.WriteString("anthropic-beta: claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14\r\n")
	raw.WriteString("X-Stainless-Lang: js\r\nX-Stainless-Package-Version: 0.94.0\r\nX-Stainless-OS: Linux\r\nX-Stainless-Arch: x64\r\n")
	raw.WriteString("X-Stainless-Runtime: node\r\nX-Stainless-Runtime-Version: v26.3.0\r\nX-Stainless-Retry-Count: 0\r\n")
	raw.WriteString("X-Claude-Code-Session-Id: 6f1c1a52-6a57-4c55-9a0e-1f2b3c4d5e6f\r\nTE: trailers\r\nx-app: cli\r\n\r\n")
	head, err := httpmsg.ReadRequestHead(bufio.NewReader(strings.NewReader(raw.String())))
	if err != nil {
		b.Fatal(err)
	}
	via := "1.1 bench"
	b.ReportAllocs()
	testkit.ReportCPU(b)
	n := 0
	var out []httpmsg.Field // a connection's slice, reused (forward)
	for i := 0; i < b.N; i++ {
		out = appendOutgoingHeader(out[:0], head, via)
		n += len(out)
	}
	if n != 15*b.N {
		b.Fatalf("%d fields per request, want 15", n/b.N)
	}
}

// FuzzOutgoingHeaderValid checks what forward's upstream.Request claims
// with HeaderValid (SPEC HTTP-5): for every head the parser accepts, the
// fields sent upstream (the head's end-to-end fields and our Via) pass the
// field checks that upstream's check would otherwise make, net/http's.
func FuzzOutgoingHeaderValid(f *testing.F) {
	for _, s := range []string{
		"GET http://a/ HTTP/1.1\r\nHost: a\r\nX: 1\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nX-\x7f: 1\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nX: a\x01b\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nX: \tv\xff\t\r\nConnection: x\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nA(b: 1\r\n\r\n",
	} {
		f.Add(s)
	}
	via := "1.1 dual-proxy-0123456789abcdef"
	f.Fuzz(func(t *testing.T, raw string) {
		head, err := httpmsg.ReadRequestHead(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return
		}
		for _, fl := range appendOutgoingHeader(nil, head, via) {
			if !httpguts.ValidHeaderFieldName(fl.Name) || !httpguts.ValidHeaderFieldValue(fl.Value) {
				t.Fatalf("accepted head %q sends field %q: %q", raw, fl.Name, fl.Value)
			}
		}
	})
}
