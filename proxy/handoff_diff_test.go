package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/pool/editor"
)

// answer is what a client sees of one exchange: every response up to the
// final one (1xx included), fields but Date, body bytes as sent.
type answer struct {
	Status []int
	Header http.Header
	Body   string
	Close  bool
}

// exchange sends raw on a new connection to addr and reads the answers.
func exchange(t *testing.T, addr, method, raw string) answer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var a answer
	for {
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("read: %v (after %v)", err, a.Status)
		}
		a.Status = append(a.Status, resp.StatusCode)
		if resp.StatusCode >= 200 {
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatalf("body: %v", err)
			}
			resp.Header.Del("Date")
			a.Header, a.Body, a.Close = resp.Header, string(b), resp.Close
			return a
		}
	}
}

// diffHandlers are the handler shapes of the proxy's own endpoints: the
// pool editor (ETag, If-Match), promhttp (gzip), streamed answers, a file
// served with ServeContent (HEAD, 304, 206), 204, redirects.
func diffHandlers(t *testing.T) http.Handler {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pool.yaml")
	if err := os.WriteFile(cfgPath, []byte("channels:\n  x: {api: anthropic, base_url: http://127.0.0.1:1, api_key_env: X_KEY}\npools:\n  p: {members: [x]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	cnt := prometheus.NewCounter(prometheus.CounterOpts{Name: "diff_total", Help: "A counter."})
	cnt.Add(7)
	reg.MustRegister(cnt)
	mux := http.NewServeMux()
	mux.Handle("/pool/", editor.New(editor.Options{Path: cfgPath}))
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{"one", "two", "three"} {
			io.WriteString(w, "data: "+ev+"\n\n")
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Len", strings.Repeat("x", len(b)))
		w.Write(b)
	})
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		http.ServeContent(w, r, "f.txt", time.Unix(1e9, 0), strings.NewReader(strings.Repeat("0123456789", 100)))
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/dir/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "dir") })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("b", 100_000))) // past net/http's 4 KiB buffer: chunked
	})
	return mux
}

// TestHandoffDifferential: the proxy's own endpoints answer exactly as
// net/http serving the same handlers does — status, fields, body, and
// whether the connection stays open (SPEC HTTP-1, HTTP-5b).
func TestHandoffDifferential(t *testing.T) {
	handlers := diffHandlers(t) // one instance: the editor names its file in answers
	ref := httptest.NewServer(handlers)
	t.Cleanup(ref.Close)
	addr, _ := proxytest.Start(t, New, Config{Handler: handlers})
	refAddr := ref.Listener.Addr().String()
	const h = "Host: localhost\r\n"
	put := "PUT /pool/config HTTP/1.1\r\n" + h + "Content-Type: application/yaml\r\nContent-Length: 9\r\n"
	for _, c := range []struct{ name, method, raw string }{
		{"editor-get", "GET", "GET /pool/config HTTP/1.1\r\n" + h + "\r\n"},
		{"editor-head", "HEAD", "HEAD /pool/config HTTP/1.1\r\n" + h + "\r\n"},
		{"editor-put-without-if-match", "PUT", put + "\r\npools: {}"},
		{"editor-put-stale-if-match", "PUT", put + "If-Match: \"nope\"\r\n\r\npools: {}"},
		{"metrics-gzip", "GET", "GET /metrics HTTP/1.1\r\n" + h + "Accept-Encoding: gzip\r\n\r\n"},
		{"metrics-plain", "GET", "GET /metrics HTTP/1.1\r\n" + h + "\r\n"},
		{"stream", "GET", "GET /stream HTTP/1.1\r\n" + h + "\r\n"},
		{"big-chunked", "GET", "GET /big HTTP/1.1\r\n" + h + "\r\n"},
		{"echo-length", "POST", "POST /echo HTTP/1.1\r\n" + h + "Content-Length: 3\r\n\r\nabc"},
		{"echo-chunked", "POST", "POST /echo HTTP/1.1\r\n" + h + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"},
		{"echo-expect-100", "POST", "POST /echo HTTP/1.1\r\n" + h + "Expect: 100-continue\r\nContent-Length: 3\r\n\r\nabc"},
		{"file", "GET", "GET /file HTTP/1.1\r\n" + h + "\r\n"},
		{"file-head", "HEAD", "HEAD /file HTTP/1.1\r\n" + h + "\r\n"},
		{"file-304", "GET", "GET /file HTTP/1.1\r\n" + h + "If-None-Match: \"v1\"\r\n\r\n"},
		{"file-206", "GET", "GET /file HTTP/1.1\r\n" + h + "Range: bytes=10-19\r\n\r\n"},
		{"204", "GET", "GET /empty HTTP/1.1\r\n" + h + "\r\n"},
		{"redirect", "GET", "GET /dir HTTP/1.1\r\n" + h + "\r\n"},
		{"404", "GET", "GET /nothing HTTP/1.1\r\n" + h + "\r\n"},
		{"http10", "GET", "GET /dir/ HTTP/1.0\r\n\r\n"},
		{"http10-keep-alive", "GET", "GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"},
		{"connection-close", "GET", "GET /dir/ HTTP/1.1\r\n" + h + "Connection: close\r\n\r\n"},
	} {
		t.Run("HTTP-1/differential/"+c.name, func(t *testing.T) {
			want := exchange(t, refAddr, c.method, c.raw)
			got := exchange(t, addr, c.method, c.raw)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("through the proxy:\n%+v\nnet/http:\n%+v", got, want)
			}
		})
	}
}
