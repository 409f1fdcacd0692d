package proxy

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// FuzzTargetPort: the parse-free port filter of selfTarget (4a50e23) must
// pass every absolute-form target whose URL names a port, with that port,
// or a request for the proxy's own listener would be forwarded to itself
// instead of served (SPEC HTTP-1).
func FuzzTargetPort(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:7898/x", "HTTP://LOCALHOST.:7898", "http://u:p@[::1]:7898/?a#b", "http://[::1%25lo]:80/",
		"http://0.0.0.0:07898#f", "http://h:80?x=:1", "http://a/b://c:1", "http://u@h:1@x:2/", "http://h:8080:9090/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Scheme, "http") { // as selfTarget
			return
		}
		want, err := strconv.Atoi(u.Port())
		if err != nil || want <= 0 {
			return
		}
		if got := targetPort(s); got != want {
			t.Fatalf("targetPort(%q) = %d, url.Parse port %d", s, got, want)
		}
	})
}
