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

const proxyURL = "http://127.0.0.1:7896"

// ours are the keys Rewrite sets.
var ours = append(slices.Clone(ProxyVars), "NO_PROXY", "no_proxy", NodeUseEnvProxy)

func TestRewrite(t *testing.T) {
	tests := []struct {
		name     string
		env      []string
		proxy    string
		noProxy  string
		notes    []string // substrings, one per expected note
		notNotes []string // substrings no note may contain
	}{
		{
			name:    "ENV-1/empty-parent",
			env:     nil,
			proxy:   proxyURL,
			noProxy: "localhost,127.0.0.1,::1,[::1]",
		},
		{
			name:     "ENV-1/socks-all-proxy-replaced-and-noted-without-password",
			env:      []string{"ALL_PROXY=socks5h://u:p4ss@host:1080"},
			proxy:    proxyURL,
			noProxy:  "localhost,127.0.0.1,::1,[::1]",
			notes:    []string{"ALL_PROXY=socks5h://***@host:1080"},
			notNotes: []string{"p4ss", "u:"},
		},
		{
			name:    "ENV-1/two-socks-vars-one-note",
			env:     []string{"ALL_PROXY=socks5://a:1", "all_proxy=SOCKS4://b:2", "HTTPS_PROXY=http://g:3"},
			proxy:   proxyURL,
			noProxy: "localhost,127.0.0.1,::1,[::1]",
			notes:   []string{"ALL_PROXY=socks5://a:1, all_proxy=SOCKS4://b:2"},
		},
		{
			name:    "ENV-1/stale-lowercase-https-proxy-overwritten",
			env:     []string{"https_proxy=http://stale:3128", "HTTPS_PROXY=http://fresh:3128"},
			proxy:   proxyURL,
			noProxy: "localhost,127.0.0.1,::1,[::1]",
		},
		{
			name:    "ENV-1/no-proxy-keeps-parent-entries-and-adds-loopback",
			env:     []string{"NO_PROXY=corp.example,localhost", "no_proxy=.internal,127.0.0.1,CORP.example"},
			proxy:   proxyURL,
			noProxy: ".internal,127.0.0.1,CORP.example,localhost,::1,[::1]",
		},
		{
			name:    "ENV-1/stale-lowercase-no-proxy-equalised",
			env:     []string{"no_proxy=old.example", "NO_PROXY=new.example"},
			proxy:   proxyURL,
			noProxy: "old.example,new.example,localhost,127.0.0.1,::1,[::1]",
		},
		{
			name:    "ENV-1/child-proxy-url-never-carries-credentials",
			env:     []string{"PATH=/bin"},
			proxy:   "http://user:secret@127.0.0.1:7896",
			noProxy: "localhost,127.0.0.1,::1,[::1]",
			notes:   []string{"credentials removed"},
		},
		{
			name: "ENV-1/duplicates-in-env",
			env: []string{"HTTP_PROXY=http://a:1", "NO_PROXY=x.com", "HTTP_PROXY=http://b:2",
				"NODE_USE_ENV_PROXY=0", "NO_PROXY=y.com", "KEEP=1", "KEEP=2"},
			proxy:   proxyURL,
			noProxy: "y.com,localhost,127.0.0.1,::1,[::1]",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.env)
			out, notes := Rewrite(tc.env, tc.proxy)
			if !reflect.DeepEqual(in, tc.env) && tc.env != nil {
				t.Fatalf("Rewrite modified its input")
			}
			for _, name := range ProxyVars {
				if v, _ := Get(out, name); v != proxyURL || count(out, name) != 1 {
					t.Errorf("%s = %q (x%d); want %q once", name, v, count(out, name), proxyURL)
				}
			}
			for _, name := range []string{"NO_PROXY", "no_proxy"} {
				if v, _ := Get(out, name); v != tc.noProxy || count(out, name) != 1 {
					t.Errorf("%s = %q (x%d); want %q once", name, v, count(out, name), tc.noProxy)
				}
			}
			if v, _ := Get(out, NodeUseEnvProxy); v != "1" || count(out, NodeUseEnvProxy) != 1 {
				t.Errorf("NODE_USE_ENV_PROXY = %q (x%d)", v, count(out, NodeUseEnvProxy))
			}
			if got, want := others(out), others(tc.env); !reflect.DeepEqual(got, want) {
				t.Errorf("other entries = %q; want %q", got, want)
			}
			if len(notes) != len(tc.notes) {
				t.Fatalf("notes = %q; want %d notes containing %q", notes, len(tc.notes), tc.notes)
			}
			for i, sub := range tc.notes {
				if !strings.Contains(notes[i], sub) {
					t.Errorf("note %q does not contain %q", notes[i], sub)
				}
			}
			for _, n := range notes {
				for _, bad := range append(tc.notNotes, "secret") {
					if strings.Contains(n, bad) {
						t.Errorf("note %q leaks %q", n, bad)
					}
				}
			}
		})
	}
	t.Run("ENV-1/everything-else-unchanged", func(t *testing.T) {
		env := []string{"ANTHROPIC_BASE_URL=https://api.example", "ANTHROPIC_AUTH_TOKEN=tok", "NOEQ", "=C:=x", "A=b=c"}
		out, _ := Rewrite(env, proxyURL)
		if !reflect.DeepEqual(out[:len(env)], env) {
			t.Fatalf("kept entries = %q; want %q", out[:len(env)], env)
		}
	})
}

// others returns the entries of env whose key Rewrite does not set, in
// order (entries without "=" included).
func others(env []string) []string {
	var out []string
	for _, kv := range env {
		if k, ok := splitKey(kv); ok && slices.Contains(ours, k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func TestRewritePool(t *testing.T) {
	const base, token = "http://127.0.0.1:7896/pool/p", "local-token"
	parent := []string{"ANTHROPIC_API_KEY=sk-real", "ANTHROPIC_API_KEY=sk-real2", "ANTHROPIC_BASE_URL=https://api.example",
		"OPENAI_API_KEY=sk-oa", "GOOGLE_API_KEY=AIza-real", "GOOGLE_GENAI_USE_VERTEXAI=true", "NO_PROXY=corp.example"}
	t.Run("POOL-21/every-api-points-at-the-pool", func(t *testing.T) {
		env, _ := Rewrite(parent, proxyURL)
		out := RewritePool(env, base, token)
		want := map[string]string{"ANTHROPIC_BASE_URL": base, "ANTHROPIC_AUTH_TOKEN": token,
			"OPENAI_BASE_URL": base + "/v1", "OPENAI_API_KEY": token, "GOOGLE_GEMINI_BASE_URL": base, "GEMINI_API_KEY": token,
			"NO_PROXY": "corp.example,localhost,127.0.0.1,::1,[::1]", "no_proxy": "corp.example,localhost,127.0.0.1,::1,[::1]",
			"HTTPS_PROXY": proxyURL}
		for k, v := range want {
			if got, _ := Get(out, k); got != v || count(out, k) != 1 {
				t.Errorf("%s = %q (x%d); want %q once", k, got, count(out, k), v)
			}
		}
		for _, k := range []string{"ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"} {
			if _, ok := Get(out, k); ok {
				t.Errorf("%s still present: %q", k, out)
			}
		}
		if a, b := mustGet(t, out, "NO_PROXY"), mustGet(t, out, "no_proxy"); a != b {
			t.Errorf("NO_PROXY %q != no_proxy %q", a, b)
		}
	})
}

func mustGet(t *testing.T, env []string, key string) string {
	t.Helper()
	v, ok := Get(env, key)
	if !ok {
		t.Fatalf("%s missing", key)
	}
	return v
}

func FuzzRewrite(f *testing.F) {
	f.Add("ALL_PROXY=socks5h://u:p@host:1080\nNO_PROXY=a,b\nno_proxy=B,c", "http://127.0.0.1:7896")
	f.Add("https_proxy=http://stale:1\nHTTPS_PROXY=x\nNOEQ\n=C:=x\n==\nA=b=c", "http://u:p@127.0.0.1:1")
	f.Add("NO_PROXY=*\nno_proxy= , ,LOCALHOST", "http://[::1]:7896/")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, blob, proxy string) {
		var env []string
		if blob != "" {
			env = strings.Split(blob, "\n")
		}
		in := slices.Clone(env)
		out, _ := Rewrite(env, proxy)
		if !reflect.DeepEqual(in, env) {
			t.Fatalf("input modified")
		}
		clean := StripCredentials(proxy)
		if _, at := authority(clean); at >= 0 {
			t.Fatalf("child proxy URL %q still has user info", clean)
		}
		for _, name := range ProxyVars {
			if v, _ := Get(out, name); v != clean || count(out, name) != 1 {
				t.Fatalf("%s = %q (x%d); want %q once", name, v, count(out, name), clean)
			}
		}
		np, _ := Get(out, "NO_PROXY")
		lp, _ := Get(out, "no_proxy")
		if np != lp || count(out, "NO_PROXY") != 1 || count(out, "no_proxy") != 1 {
			t.Fatalf("NO_PROXY %q / no_proxy %q", np, lp)
		}
		entries := strings.Split(np, ",")
		for _, e := range append(NoProxyEntries(env), LoopbackNoProxy...) {
			if !containsFold(entries, e) {
				t.Fatalf("NO_PROXY %q lacks %q", np, e)
			}
		}
		seen := map[string]bool{}
		for _, e := range entries {
			if seen[strings.ToLower(e)] {
				t.Fatalf("NO_PROXY %q has duplicate %q", np, e)
			}
			seen[strings.ToLower(e)] = true
		}
		if count(out, NodeUseEnvProxy) != 1 {
			t.Fatalf("NODE_USE_ENV_PROXY x%d", count(out, NodeUseEnvProxy))
		}
		if got, want := others(out), others(env); !slices.Equal(got, want) {
			t.Fatalf("other entries = %q; want %q", got, want)
		}
	})
}
