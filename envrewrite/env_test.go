//go:build !windows

// POSIX name rules (the Native rule of Linux and macOS); the Windows rule is tested on every OS
// in names_test.go.

package envrewrite

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestGetSet(t *testing.T) {
	env := []string{"A=1", "B=2", "A=3", "NOEQUALS", "=C:=C:\\dir", "E="}
	tests := []struct {
		name, key, want string
		found           bool
	}{
		{"ENV-1/last-occurrence-wins", "A", "3", true},
		{"ENV-1/single", "B", "2", true},
		{"ENV-1/empty-value-is-set", "E", "", true},
		{"ENV-1/absent", "Z", "", false},
		{"ENV-1/entry-without-equals-is-no-key", "NOEQUALS", "", false},
		{"ENV-1/leading-equals-belongs-to-key", "=C:", "C:\\dir", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Get(env, tc.key)
			if got != tc.want || ok != tc.found {
				t.Fatalf("Get(%q) = %q, %v; want %q, %v", tc.key, got, ok, tc.want, tc.found)
			}
		})
	}
	t.Run("ENV-1/set-removes-duplicates", func(t *testing.T) {
		orig := slices.Clone(env)
		out := Set(env, "A", "9")
		want := []string{"B=2", "NOEQUALS", "=C:=C:\\dir", "E=", "A=9"}
		if !reflect.DeepEqual(out, want) {
			t.Fatalf("Set = %q; want %q", out, want)
		}
		if !reflect.DeepEqual(env, orig) {
			t.Fatalf("Set modified its input: %q", env)
		}
	})
	t.Run("POOL-20/unset", func(t *testing.T) {
		out := Unset(env, "A")
		if _, ok := Get(out, "A"); ok || len(out) != len(env)-2 {
			t.Fatalf("Unset = %q", out)
		}
	})
}

func TestParentProxies(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want []Proxy
	}{
		{"ENV-2/none", []string{"PATH=/bin"}, nil},
		{"GW-1/order-follows-ProxyVars", []string{
			"all_proxy=socks5://s:1", "http_proxy=http://h:2", "HTTPS_PROXY=http://a:3",
			"ALL_PROXY=http://b:4", "https_proxy=http://c:5", "HTTP_PROXY=http://d:6",
		}, []Proxy{
			{"HTTPS_PROXY", "http://a:3"}, {"https_proxy", "http://c:5"}, {"HTTP_PROXY", "http://d:6"},
			{"http_proxy", "http://h:2"}, {"ALL_PROXY", "http://b:4"}, {"all_proxy", "socks5://s:1"},
		}},
		{"ENV-2/empty-and-blank-skipped", []string{"HTTPS_PROXY=", "HTTP_PROXY=  ", "http_proxy= http://x:1 "},
			[]Proxy{{"http_proxy", "http://x:1"}}},
		{"ENV-2/duplicates-last-wins", []string{"HTTPS_PROXY=http://old:1", "HTTPS_PROXY=http://new:2"},
			[]Proxy{{"HTTPS_PROXY", "http://new:2"}}},
		{"ENV-2/duplicates-last-empty-means-unset", []string{"HTTPS_PROXY=http://old:1", "HTTPS_PROXY="}, nil},
		{"GW-2/same-value-twice-kept-for-route", []string{"HTTPS_PROXY=http://g:1", "https_proxy=http://g:1"},
			[]Proxy{{"HTTPS_PROXY", "http://g:1"}, {"https_proxy", "http://g:1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParentProxies(tc.env); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParentProxies = %v; want %v", got, tc.want)
			}
		})
	}
}

func TestNoProxy(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		want    string
		entries []string
	}{
		{"ORD-3b/none", nil, "", nil},
		{"ORD-3b/upper-only", []string{"NO_PROXY=a.com"}, "a.com", []string{"a.com"}},
		{"ORD-3b/lower-only", []string{"no_proxy=b.com"}, "b.com", []string{"b.com"}},
		{"ORD-3b/curl-rule-lowercase-wins", []string{"NO_PROXY=a.com", "no_proxy=b.com"}, "b.com", []string{"b.com", "a.com"}},
		{"ORD-3b/empty-lowercase-falls-back", []string{"NO_PROXY=a.com", "no_proxy="}, "a.com", []string{"a.com"}},
		{"ORD-3b/union-dedup-case-insensitive", []string{"NO_PROXY=A.com, ,c.com,", "no_proxy= a.COM ,b.com,c.com"},
			" a.COM ,b.com,c.com", []string{"a.COM", "b.com", "c.com"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NoProxy(tc.env); got != tc.want {
				t.Errorf("NoProxy = %q; want %q", got, tc.want)
			}
			if got := NoProxyEntries(tc.env); !reflect.DeepEqual(got, tc.entries) {
				t.Errorf("NoProxyEntries = %q; want %q", got, tc.entries)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, redacted, stripped string }{
		{"socks5h://u:p@host:1080", "socks5h://***@host:1080", "socks5h://host:1080"},
		{"http://127.0.0.1:7896", "http://127.0.0.1:7896", "http://127.0.0.1:7896"},
		{"http://u:p@a@b:1/x@y", "http://***@b:1/x@y", "http://b:1/x@y"},
		{"u:p@host:1", "***@host:1", "host:1"},
		{"http://u:%zz@h:1", "http://***@h:1", "http://h:1"},
		{"", "", ""},
	}
	for _, tc := range tests {
		t.Run("ENV-1/"+tc.in, func(t *testing.T) {
			if got := Redact(tc.in); got != tc.redacted {
				t.Errorf("Redact = %q; want %q", got, tc.redacted)
			}
			if got := StripCredentials(tc.in); got != tc.stripped {
				t.Errorf("StripCredentials = %q; want %q", got, tc.stripped)
			}
		})
	}
}

// count returns how many entries of env have key.
func count(env []string, key string) int {
	n := 0
	for _, kv := range env {
		if k, ok := splitKey(kv); ok && k == key {
			n++
		}
	}
	return n
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(e string) bool { return strings.EqualFold(e, s) })
}
