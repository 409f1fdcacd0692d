package route

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func mustRules(t testing.TB, direct, proxy []string, noProxy string) *Rules {
	t.Helper()
	r, err := ParseRules(direct, proxy, noProxy)
	if err != nil {
		t.Fatalf("ParseRules: %v", err)
	}
	return r
}

func TestPatternMatch(t *testing.T) {
	cases := []struct {
		pattern, host string
		want          bool
	}{
		{"*.example.com", "a.example.com", true}, // issue text
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "notexample.com", false},
		{"*.example.com", "a.example.com.evil", false},
		{"example.com", "example.com", true},
		{"example.com", "a.example.com", false},
		{"Example.COM.", "example.com", true},
		{"*.BÜCHER.example.", "www.xn--bcher-kva.example", true},
		{"bücher.example", "xn--bcher-kva.example", true},
		{"api*.example.com", "api2.example.com", true},
		{"api*.example.com", "api.example.com", false}, // '*' is one or more
		{"*api*", "myapi1", true},
		{"*api*", "api", false},
		{"10.0.0.*", "10.0.0.5", true},
		{"10.0.0.*", "10.0.0.", false},
		{"127.0.0.1", "127.0.0.1", true},
		{"[::1]", "::1", true},
		{"::1", "::1", true},
		{"[fe80::1%25eth0]", "fe80::1", true},
		{"*", "anything.at.all", true},
		{"*", "::1", true},
		{"*.example.com", "::1", false},
		{"*1", "::1", false}, // IPv6 hosts meet only IPv6 patterns and "*"
	}
	for _, c := range cases {
		t.Run("ORD-3/"+c.pattern+"~"+c.host, func(t *testing.T) {
			r := mustRules(t, []string{c.pattern}, nil, "")
			if got := r.Match(c.host, 443) == RulePreferDirect; got != c.want {
				t.Fatalf("pattern %q host %q: match %v, want %v", c.pattern, c.host, got, c.want)
			}
		})
	}
}

func TestPatternZoneNeverMatchesDomain(t *testing.T) {
	r := mustRules(t, []string{"*.example.com"}, nil, ".example.com")
	raw := "[::1%25.example.com]"
	h, err := NormalizeHost(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{h, raw, "::1%25.example.com", "::1%.example.com"} {
		if got := r.Match(host, 443); got != RuleNone {
			t.Errorf("ORD-3b: host %q matched %v; a zone id must never take part", host, got)
		}
	}
}

func TestPatternErrors(t *testing.T) {
	for _, p := range []string{
		"example.com/path", "10.0.0.0/8", "example.com:443", "http://x", "^api", "api$", "(a)", "[a]",
		"{a}", "a|b", "a+b", "a?b", `a\b`, "a b", "a..b", "*..com", "**.com", "bü*.de", "a@b", "127.1",
		"fe80::*",
	} {
		t.Run("ORD-3/"+p, func(t *testing.T) {
			_, err := ParseRules(nil, []string{"ok.com", p}, "")
			if err == nil {
				t.Fatalf("pattern %q accepted", p)
			}
			if !strings.Contains(err.Error(), strconv.Quote(p)) || !strings.Contains(err.Error(), "prefer-proxy") {
				t.Fatalf("error %q does not name the list and pattern %q", err, p)
			}
		})
	}
}

func TestPatternListSplitting(t *testing.T) {
	r := mustRules(t, []string{" a.com , *.b.com,, ", "c.com"}, nil, "")
	for _, h := range []string{"a.com", "x.b.com", "c.com"} {
		if r.Match(h, 80) != RulePreferDirect {
			t.Errorf("ORD-3: %q not matched by comma-separated list", h)
		}
	}
}

func TestRuleBothListsDirectFirst(t *testing.T) {
	r := mustRules(t, []string{"*.example.com"}, []string{"api.example.com", "other.org"}, "")
	if got := r.Match("api.example.com", 443); got != RulePreferDirect {
		t.Errorf("ORD-3/both-lists: got %v, want prefer-direct", got)
	}
	if got := r.Match("other.org", 443); got != RulePreferProxy {
		t.Errorf("ORD-3/prefer-proxy: got %v", got)
	}
	if got := r.Match("none.net", 443); got != RuleNone {
		t.Errorf("ORD-3/none: got %v", got)
	}
	r = mustRules(t, nil, []string{"*.example.com"}, "example.com")
	if got := r.Match("a.example.com", 443); got != RulePreferDirect {
		t.Errorf("ORD-3b/no-proxy-beats-prefer-proxy: got %v", got)
	}
	var nilRules *Rules
	if nilRules.Match("a.example.com", 1) != RuleNone || nilRules.Ignored() != nil {
		t.Error("nil *Rules must match nothing")
	}
}

func TestNoProxy(t *testing.T) {
	cases := []struct {
		noProxy, host string
		port          int
		want          bool
	}{
		{"example.com", "x.example.com", 443, true}, // issue text
		{"example.com", "example.com", 443, true},
		{"example.com", "notexample.com", 443, false},
		{".example.com", "example.com", 443, true},
		{".example.com", "a.b.example.com", 443, true},
		{"*.example.com", "example.com", 443, true},
		{"*.example.com", "notexample.com", 443, false},
		{"Example.COM.", "x.example.com", 443, true},
		{"bücher.example", "www.xn--bcher-kva.example", 443, true},
		{"127.0.0.1", "127.0.0.1", 443, true},
		{"127.0.0.1", "foo.127.0.0.1", 443, false}, // issue text
		{"127.0.0.1", "127.0.0.2", 443, false},
		{"10.0.0.0/8", "10.20.30.40", 443, true}, // CIDR range
		{"10.0.0.0/8", "11.0.0.1", 443, false},
		{"10.0.0.0/8", "::ffff:10.1.2.3", 443, true},
		{"fd00::/8", "fd12::1", 443, true},
		{"[fd00::]/8", "fd12::1", 443, true},
		{"::1", "::1", 443, true},
		{"[::1]", "::1", 443, true},
		{"[::1]:8080", "::1", 8080, true},
		{"[::1]:8080", "::1", 443, false},
		{"fe80::1%eth0", "fe80::1", 443, true},
		{"[fe80::1%25eth0]", "fe80::1", 443, true},
		{"example.com:8443", "a.example.com", 8443, true},
		{"example.com:8443", "a.example.com", 443, false},
		{"127.0.0.1:80", "127.0.0.1", 80, true},
		{"127.0.0.1:80", "127.0.0.1", 81, false},
		{"*", "anything.example", 1, true},
		{"*", "::1", 1, true},
		{"0.1", "127.0.0.1", 443, false}, // an address never meets a domain suffix
		{"foo.com, bar.com", "x.bar.com", 1, true},
		{"", "example.com", 443, false},
	}
	for _, c := range cases {
		t.Run("ORD-3b/"+c.noProxy+"~"+c.host, func(t *testing.T) {
			r := mustRules(t, nil, nil, c.noProxy)
			if got := r.Match(c.host, c.port) == RulePreferDirect; got != c.want {
				t.Fatalf("NO_PROXY=%q host %q:%d: match %v, want %v", c.noProxy, c.host, c.port, got, c.want)
			}
		})
	}
}

func TestNoProxyIgnored(t *testing.T) {
	r := mustRules(t, nil, nil, "good.com, exa mple.com ,*.bad*,foo:bar,[notip],:80,10.0.0.0/33,a:99999,,127.0.0.1")
	want := []string{"exa mple.com", "*.bad*", "foo:bar", "[notip]", ":80", "10.0.0.0/33", "a:99999"}
	if got := r.Ignored(); !slices.Equal(got, want) {
		t.Fatalf("ORD-3b: Ignored() = %q, want %q", got, want)
	}
	if r.Match("x.good.com", 1) != RulePreferDirect || r.Match("127.0.0.1", 1) != RulePreferDirect {
		t.Fatal("ORD-3b: valid entries next to invalid ones must still match")
	}
}

func TestGlobMatchAgainstRegexp(t *testing.T) {
	for _, c := range [][2]string{{"*", "a"}, {"*", ""}, {"a*b*c", "aXbYc"}, {"a*b*c", "abc"},
		{"*.*", "a.b.c"}, {"*a", "aaa"}, {"a*", "a"}, {"**", "ab"}, {"*b*", "bbb"}} {
		if got, want := globMatch(c[0], c[1]), globRegexp(c[0]).MatchString(c[1]); got != want {
			t.Errorf("globMatch(%q, %q) = %v, regexp says %v", c[0], c[1], got, want)
		}
	}
}

func globRegexp(p string) *regexp.Regexp {
	parts := strings.Split(p, "*")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile(`^(?s:` + strings.Join(parts, ".+") + `)$`)
}

func FuzzGlobMatch(f *testing.F) {
	f.Add("*.example.com", "a.b.example.com")
	f.Add("a*b*", "ab")
	f.Fuzz(func(t *testing.T, p, s string) {
		// Normalized hosts and patterns are ASCII; regexp works on UTF-8.
		if len(p) > 64 || len(s) > 256 || !isASCII(p) || !isASCII(s) {
			return
		}
		if got, want := globMatch(p, s), globRegexp(p).MatchString(s); got != want {
			t.Fatalf("globMatch(%q, %q) = %v, regexp says %v", p, s, got, want)
		}
	})
}

func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"*.example.com", "[::1]", "bücher.*", "a/b", "10.0.0.*", "x:1", "*"} {
		f.Add(s, "a.example.com")
	}
	f.Fuzz(func(t *testing.T, pattern, host string) {
		r, err := ParseRules([]string{pattern}, nil, "")
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(strings.TrimSpace(pattern))) &&
				!strings.Contains(pattern, ",") {
				t.Fatalf("error %q does not name pattern %q", err, pattern)
			}
			return
		}
		h, err := NormalizeHost(host)
		if err != nil {
			return
		}
		_ = r.Match(h, 443)
		// A plain host pattern always matches itself.
		p := strings.TrimSpace(pattern)
		if n, err := NormalizeHost(p); err == nil && !strings.ContainsAny(p, ",*") && r.Match(n, 1) != RulePreferDirect {
			t.Fatalf("pattern %q does not match its own host %q", pattern, n)
		}
	})
}

func FuzzNoProxy(f *testing.F) {
	for _, s := range []string{"example.com", ".example.com,*.x.org", "127.0.0.1,::1", "10.0.0.0/8", "[::1]:80", "*"} {
		f.Add(s, "a.example.com", 443)
	}
	f.Fuzz(func(t *testing.T, noProxy, host string, port int) {
		r, err := ParseRules(nil, nil, noProxy)
		if err != nil {
			t.Fatalf("NO_PROXY must never be fatal: %v", err)
		}
		h, err := NormalizeHost(host)
		if err != nil {
			return
		}
		_ = r.Match(h, port)
		// A single valid domain entry matches itself and its subdomains,
		// never a name that merely ends with the same letters.
		e := strings.TrimSpace(noProxy)
		if n, err := NormalizeHost(e); err == nil && n == e && !couldBeIP(n) && !strings.Contains(e, ",") {
			if r.Match(n, port) != RulePreferDirect || r.Match("x."+n, port) != RulePreferDirect {
				t.Fatalf("NO_PROXY=%q does not match its apex/subdomain", e)
			}
			if r.Match("x"+n, port) != RuleNone {
				t.Fatalf("NO_PROXY=%q matches %q", e, "x"+n)
			}
		}
	})
}

func BenchmarkRulesMatch(b *testing.B) {
	r := mustRules(b, []string{"*.corp.example", "intranet", "10.1.*"}, []string{"*.openai.com", "api.anthropic.com"},
		"localhost,127.0.0.1,::1,.internal.example,10.0.0.0/8,[fd00::]/8")
	for _, h := range []string{"api.anthropic.com", "a.b.internal.example", "10.2.3.4", "github.com"} {
		b.Run(h, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = r.Match(h, 443)
			}
		})
	}
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
