package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
)

// TestSelfTargetSpellings: every spelling of the proxy's own listener in an
// absolute-form target is served by the proxy itself (SPEC HTTP-1), or, for
// names the self check does not know as loopback, refused as a loop (508,
// Via) — never forwarded on. 4a50e23 put a parse-free port filter in front
// of the check; FuzzTargetPort holds the filter to url.Parse.
func TestSelfTargetSpellings(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "own:"+r.URL.RequestURI()) })
	addr, _ := startProxy(t, Config{Handler: h, LoopbackDirect: true})
	_, port, _ := net.SplitHostPort(addr)
	for _, tc := range []struct {
		target string
		served bool // else a loop refusal is also right
	}{
		{"http://127.0.0.1:" + port + "/s", true},
		{"HTTP://LOCALHOST:" + port + "/s", true},
		{"http://localhost:" + port + "?q", true},
		{"http://[::1]:" + port + "/s", true},
		{"http://[::ffff:127.0.0.1]:" + port + "/s", true},
		{"http://user:pw@127.0.0.1:" + port + "/s", true},
		{"http://127.0.0.1:0" + port + "/s", true},
		{"http://a.localhost:" + port + "/s", true},
		{"http://127.0.0.1:" + port + "#frag", true},
		{"http://localhost.:" + port + "/s", false},
		{"http://0.0.0.0:" + port + "/s", false},
	} {
		t.Run("HTTP-1/"+tc.target, func(t *testing.T) {
			c := dialProxy(t, addr)
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", tc.target)
			resp, body := readResponse(t, bufio.NewReader(c), "GET")
			switch {
			case resp.StatusCode == 200 && len(body) > 4 && body[:4] == "own:":
			case !tc.served && resp.StatusCode == http.StatusLoopDetected:
			default:
				t.Fatalf("got %d %q: neither served nor refused as a loop", resp.StatusCode, body)
			}
		})
	}
}
