package route

import (
	"strings"
	"testing"
)

func TestNormalizeHost(t *testing.T) {
	good := []struct{ in, want string }{
		{"BÜCHER.example.", "xn--bcher-kva.example"}, // issue text
		{"bücher.example", "xn--bcher-kva.example"},
		{"bücher\u3002example", "xn--bcher-kva.example"}, // ideographic full stop
		{"bücher\uff0eexample\uff0e", "xn--bcher-kva.example"},
		{"münchen.de", "xn--mnchen-3ya.de"},
		{"例え.テスト", "xn--r8jz45g.xn--zckzah"},
		{"ß.de", "xn--zca.de"},         // non-transitional: ß kept
		{"ＥＸＡＭＰＬＥ.com", "example.com"}, // full-width ASCII folded
		{"Example.COM.", "example.com"},
		{"example.com", "example.com"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
		{"my_host.local", "my_host.local"},
		{"localhost", "localhost"},
		{"127.0.0.1", "127.0.0.1"},
		{"127.0.0.1.", "127.0.0.1"},
		{"[::1]", "::1"},
		{"::1", "::1"},
		{"[0:0::1%25eth0]", "::1"},
		{"::1%eth0", "::1"},
		{"[::1%25.example.com]", "::1"},
		{"[2001:DB8:0::1]", "2001:db8::1"},
		{"[::ffff:1.2.3.4]", "::ffff:1.2.3.4"},
		{"1password.com", "1password.com"},
		{strings.Repeat("a", 63) + ".com", strings.Repeat("a", 63) + ".com"},
	}
	for _, c := range good {
		t.Run("ORD-3/"+c.in, func(t *testing.T) {
			got, err := NormalizeHost(c.in)
			if err != nil || got != c.want {
				t.Fatalf("NormalizeHost(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
	bad := []string{
		"", ".", "..", "a..b", ".a", "exa mple.com", "a/b", "a@b", "a*b", "[example.com]",
		"[::1", "::1]", "[]", "[1.2.3.4]", "a:b", "example.com:443", "127.1", "1.2.3.256",
		"0x7f.0.0.1", "foo.127.0.0.1", "10.0x1", "bü cher.de", "bü/cher.de", "\xff.de", "a\x00b",
		strings.Repeat("a", 64) + ".com", strings.Repeat("a.", 127) + "ab",
		"\u3002", "bücher\u3002\u3002de", strings.Repeat("x", maxRawHost+1),
	}
	for _, in := range bad {
		t.Run("ORD-3/reject/"+in, func(t *testing.T) {
			if got, err := NormalizeHost(in); err == nil {
				t.Fatalf("NormalizeHost(%q) = %q, want error", in, got)
			}
		})
	}
}

func TestNormalizeHostNoAllocWhenCanonical(t *testing.T) {
	for _, h := range []string{"api.example.com", "127.0.0.1", "::1", "2001:db8::1"} {
		if n := testing.AllocsPerRun(100, func() { _, _ = NormalizeHost(h) }); n != 0 {
			t.Errorf("NormalizeHost(%q): %v allocs, want 0", h, n)
		}
	}
}

// checkNormalized asserts the properties every NormalizeHost result has.
func checkNormalized(t *testing.T, in, out string) {
	t.Helper()
	if out == "" || len(out) > maxHostLen {
		t.Fatalf("NormalizeHost(%q) = %q: bad length", in, out)
	}
	for i := 0; i < len(out); i++ {
		if c := out[i]; !isHostByte(c) && c != ':' {
			t.Fatalf("NormalizeHost(%q) = %q: byte %q", in, out, c)
		}
	}
	if strings.Contains(out, "..") || out[0] == '.' || out[len(out)-1] == '.' {
		t.Fatalf("NormalizeHost(%q) = %q: empty label", in, out)
	}
	again, err := NormalizeHost(out)
	if err != nil || again != out {
		t.Fatalf("not idempotent: %q → %q → %q, %v", in, out, again, err)
	}
}

func FuzzNormalizeHost(f *testing.F) {
	for _, s := range []string{"BÜCHER.example.", "[::1%25.example.com]", "127.0.0.1.", "a..b",
		"例え.テスト", "ＥＸＡＭＰＬＥ.com", "[fe80::1%25eth0]", "0x7f.1", "xn--", "_a.b-c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := NormalizeHost(s)
		if err != nil {
			if out != "" {
				t.Fatalf("error %v with result %q", err, out)
			}
			return
		}
		checkNormalized(t, s, out)
	})
}

func BenchmarkNormalizeHost(b *testing.B) {
	for _, h := range []string{"api.anthropic.com", "API.Anthropic.COM.", "[2001:db8::1]", "bücher.example"} {
		b.Run(h, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = NormalizeHost(h)
			}
		})
	}
}
