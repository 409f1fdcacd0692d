package envrewrite

import (
	"slices"
	"strings"
	"testing"
)

// folded counts the entries of env per upper-cased name.
func folded(env []string) map[string]int {
	m := map[string]int{}
	for _, kv := range env {
		if k, ok := splitKey(kv); ok {
			m[strings.ToUpper(k)]++
		}
	}
	return m
}

// The Windows rule is a plain value, so it is tested here on Linux (SPEC PLAT-1, ENV-1).
func TestWindowsNames(t *testing.T) {
	win, posix := NamesFor("windows"), NamesFor("linux")
	if !win.FoldCase || posix.FoldCase || NamesFor("darwin").FoldCase {
		t.Fatalf("NamesFor: windows %v, linux %v, darwin %v", win, posix, NamesFor("darwin"))
	}
	parent := []string{
		"Path=C:\\Windows", "=C:=C:\\work", "https_proxy=http://corp:3128",
		"Http_Proxy=http://corp:3128", "All_Proxy=socks5://u:secret@s:1080",
		"no_proxy=.corp.example", "ANTHROPIC_BASE_URL=https://api.anthropic.com", "PATH=C:\\bin",
	}
	const url = "http://127.0.0.1:7896"

	t.Run("PLAT-1/ENV-1/windows-one-entry-per-folded-name", func(t *testing.T) {
		out, _ := win.Rewrite(parent, url)
		for k, c := range folded(out) {
			if c != 1 {
				t.Errorf("%s occurs %d times in %q", k, c, out)
			}
		}
		for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"} {
			if v, ok := win.Get(out, k); !ok || v != url {
				t.Errorf("%s = %q, %v; want %q", k, v, ok, url)
			}
			if !slices.Contains(out, k+"="+url) {
				t.Errorf("%s not written under its upper-case name: %q", k, out)
			}
		}
		if v, _ := win.Get(out, "no_proxy"); v != ".corp.example,localhost,127.0.0.1,::1,[::1]" {
			t.Errorf("NO_PROXY = %q", v)
		}
		if v, _ := win.Get(out, "node_use_env_proxy"); v != "1" {
			t.Errorf("NODE_USE_ENV_PROXY = %q", v)
		}
		if v, _ := win.Get(out, "PATH"); v != "C:\\bin" {
			t.Errorf("PATH = %q, want the last spelling's value (as os/exec keeps)", v)
		}
		if !slices.Contains(out, "=C:=C:\\work") || !slices.Contains(out, "ANTHROPIC_BASE_URL=https://api.anthropic.com") {
			t.Errorf("other entries not kept: %q", out)
		}
	})
	t.Run("PLAT-1/ENV-2/windows-parent-read-case-insensitively", func(t *testing.T) {
		got := win.ParentProxies(parent)
		want := []Proxy{
			{Var: "HTTPS_PROXY", Value: "http://corp:3128"},
			{Var: "HTTP_PROXY", Value: "http://corp:3128"},
			{Var: "ALL_PROXY", Value: "socks5://u:secret@s:1080"},
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ParentProxies = %v, want %v", got, want)
		}
		if v, ok := win.Get(parent, "NO_PROXY"); !ok || v != ".corp.example" {
			t.Fatalf("Get(NO_PROXY) = %q, %v", v, ok)
		}
	})
	t.Run("PLAT-1/ENV-1/windows-socks-noted-once-without-password", func(t *testing.T) {
		_, notes := win.Rewrite(parent, url)
		if len(notes) != 1 || !strings.Contains(notes[0], "ALL_PROXY=socks5://***@s:1080") ||
			strings.Contains(notes[0], "secret") || strings.Count(notes[0], "socks5") != 1 {
			t.Fatalf("notes = %q", notes)
		}
	})
	t.Run("PLAT-1/POOL-20/windows-any-spelling-of-api-key-removed", func(t *testing.T) {
		env := []string{"anthropic_api_key=sk-real", "Anthropic_Base_Url=https://x", "No_Proxy=a"}
		out := win.RewritePool(env, "http://127.0.0.1:1/pool/p", "tok")
		if _, ok := win.Get(out, "ANTHROPIC_API_KEY"); ok {
			t.Fatalf("API key kept: %q", out)
		}
		if v, _ := win.Get(out, "anthropic_base_url"); v != "http://127.0.0.1:1/pool/p" {
			t.Fatalf("base URL = %q in %q", v, out)
		}
		for k, c := range folded(out) {
			if c != 1 {
				t.Errorf("%s occurs %d times in %q", k, c, out)
			}
		}
	})
	t.Run("PLAT-1/ENV-1/posix-two-spellings-two-variables", func(t *testing.T) {
		out, _ := posix.Rewrite([]string{"https_proxy=http://stale:1", "Path=x", "PATH=y"}, url)
		for _, k := range []string{"HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"} {
			if _, ok := posix.Get(out, k); !ok {
				t.Errorf("%s missing: %q", k, out)
			}
		}
		if v, _ := posix.Get(out, "Path"); v != "x" {
			t.Errorf("Path = %q: POSIX names must stay case-sensitive", v)
		}
	})
}
