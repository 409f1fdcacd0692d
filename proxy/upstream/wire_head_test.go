package upstream

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
)

// FuzzAppendHead checks the one-Write request head against the
// piece-by-piece one (SPEC GW-4, HTTP-5: the same bytes to an origin and
// to an http gateway with credentials), whether it fits the buffer or
// falls back, and that a head it reports fitting never grows past it.
func FuzzAppendHead(f *testing.F) {
	f.Add("GET", "/", "127.0.0.1:8080", "Via: 1.1 x", int64(0), uint8(0), false)
	f.Add("POST", "/v1/messages?beta=true", "api.example.test", "Content-Type: application/json\nX-A: 1", int64(42), uint8(1), true)
	f.Add("PATCH", "*", "a", "", int64(-1), uint8(2), true)
	f.Add("PUT", "/"+strings.Repeat("p", 5000), "a", strings.Repeat("X: y\n", 300), int64(0), uint8(0), false)
	f.Fuzz(func(t *testing.T, method, origin, authority, header string, length int64, kind uint8, auth bool) {
		r := &Request{Method: method, Origin: origin, Absolute: "http://" + authority + origin, Authority: authority, Length: length}
		for line := range strings.SplitSeq(header, "\n") {
			if name, value, ok := strings.Cut(line, ": "); ok {
				r.Header = append(r.Header, httpmsg.Field{Name: name, Value: value})
			}
		}
		c := candidate.Direct
		switch kind % 3 {
		case 1:
			c = candidate.Candidate{Kind: candidate.KindHTTP, Addr: "gw:3128", HasAuth: auth, User: "u", Password: "p:w"}
		case 2:
			c = candidate.Candidate{Kind: candidate.KindSOCKS5H, Addr: "gw:1080"}
		}
		var want bytes.Buffer
		wb := bufio.NewWriterSize(&want, 16)
		if err := writeHeadPieces(wb, c, r); err != nil || wb.Flush() != nil {
			t.Fatal(err)
		}
		for _, size := range []int{16, 512, 4096, 1 << 16} {
			var got bytes.Buffer
			bw := bufio.NewWriterSize(&got, size)
			bw.WriteString("x") // a buffer with something in it already
			free := bw.Available()
			b, ok := appendHead(bw, c, r)
			if ok && (len(b) > free || len(b) != want.Len()) {
				t.Fatalf("size %d: appended %d bytes into %d free, want %d", size, len(b), free, want.Len())
			}
			if err := writeHead(bw, c, r); err != nil || bw.Flush() != nil {
				t.Fatal(err)
			}
			if got.String() != "x"+want.String() {
				t.Fatalf("size %d: head\n%q\nwant\n%q", size, got.String(), "x"+want.String())
			}
		}
	})
}
