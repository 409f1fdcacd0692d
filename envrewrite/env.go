// Package envrewrite builds the child's environment for the launcher. Every
// function is pure: it takes an environment in the "KEY=VALUE" form os.Environ
// returns and gives back a new slice; the input is never modified and the
// process environment is never read.
//
// How names compare depends on the OS the child runs on, and
// that rule is a value, [Names], so each OS's rule is tested on every OS:
// on Linux and macOS names are case-sensitive (POSIX): HTTPS_PROXY and
// https_proxy are two variables, and Rewrite writes both. On Windows they are
// one variable (the environment block compares names case-insensitively):
// lookups ignore case, and Rewrite leaves exactly one entry per case-folded
// name. The package-level functions use [Native], the rule of the OS the
// program runs on.
//
// An environment may hold a key more than once; as in os/exec (dedupEnv),
// the last occurrence wins. Entries without "=" are kept as they are and
// never treated as a key.
package envrewrite

import (
	"runtime"
	"strings"
)

// Names is one OS's rule for environment variable names (SPEC PLAT-1). The
// zero value is the POSIX rule (case-sensitive).
type Names struct {
	// FoldCase is true where names are case-insensitive (Windows):
	// "HTTPS_PROXY" and "https_proxy" then name one variable.
	FoldCase bool
}

// NamesFor returns the rule of the OS named goos (a runtime.GOOS value):
// case-insensitive on "windows", case-sensitive everywhere else.
func NamesFor(goos string) Names { return Names{FoldCase: goos == "windows"} }

// Native is the rule of the OS this program runs on; the package-level
// functions use it.
var Native = NamesFor(runtime.GOOS)

// fold returns the form of key under which n compares it: key itself, or
// its upper case on a case-insensitive OS.
func (n Names) fold(key string) string {
	if n.FoldCase {
		return strings.ToUpper(key)
	}
	return key
}

// ProxyVars are the proxy variables in the order their values become
// candidates. Rewrite sets all six.
var ProxyVars = []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"}

// splitKey returns the key of one environment entry and whether the entry
// has the "KEY=VALUE" form. Like os/exec, a single leading "=" belongs to
// the key (Windows keeps "=C:=C:\dir" entries).
func splitKey(kv string) (key string, ok bool) {
	i := strings.IndexByte(kv, '=')
	if i == 0 {
		i = strings.IndexByte(kv[1:], '=') + 1
		if i == 0 {
			return "", false
		}
	}
	if i < 0 {
		return "", false
	}
	return kv[:i], true
}

// Get returns the value of the last occurrence of key in env and whether
// key occurs at all (an empty value still reports true), under the Native
// rule.
func Get(env []string, key string) (string, bool) { return Native.Get(env, key) }

// Get is [Get] under rule n: on a case-insensitive OS any spelling of key
// matches.
func (n Names) Get(env []string, key string) (string, bool) {
	want := n.fold(key)
	for i := len(env) - 1; i >= 0; i-- {
		if k, ok := splitKey(env[i]); ok && n.fold(k) == want {
			return env[i][len(k)+1:], true
		}
	}
	return "", false
}

// Set returns a new slice in which every occurrence of key is removed and
// "key=value" is appended at the end, so exactly one occurrence remains.
// The other entries keep their order. env is not modified. Native rule.
func Set(env []string, key, value string) []string { return Native.Set(env, key, value) }

// Set is [Set] under rule n (every spelling of key is removed on a
// case-insensitive OS).
func (n Names) Set(env []string, key, value string) []string {
	out := n.Unset(env, key)
	return append(out, key+"="+value)
}

// Unset returns a new slice without any occurrence of key. env is not
// modified. Native rule.
func Unset(env []string, key string) []string { return Native.Unset(env, key) }

// Unset is [Unset] under rule n.
func (n Names) Unset(env []string, key string) []string {
	want := n.fold(key)
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, ok := splitKey(kv); ok && n.fold(k) == want {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Proxy is one proxy variable found in the parent's environment.
type Proxy struct {
	// Var is the variable's name, one of ProxyVars.
	Var string
	// Value is the variable's value, surrounding spaces trimmed, otherwise
	// unchanged (it may carry credentials, a socks scheme or garbage:
	// validation and the warning for a skipped value belong to the
	// candidate parser).
	Value string
}

// distinct returns names without the ones that fold to an earlier name.
func (n Names) distinct(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := make([]string, 0, len(names))
	for _, k := range names {
		if f := n.fold(k); !seen[f] {
			seen[f] = true
			out = append(out, k)
		}
	}
	return out
}

// ParentProxies returns the non-empty proxy variables of env in ProxyVars
// order (SPEC GW-1, ENV-2), under the Native rule. It must be called on the
// parent's environment before Rewrite. The same value under two names is
// listed twice; duplicates are removed by host:port when candidates are
// built.
func ParentProxies(env []string) []Proxy { return Native.ParentProxies(env) }

// ParentProxies is [ParentProxies] under rule n. On a case-insensitive OS
// each variable is listed once, under its upper-case name in Var, whatever
// spelling env uses.
func (n Names) ParentProxies(env []string) []Proxy {
	var out []Proxy
	for _, name := range n.distinct(ProxyVars) {
		v, _ := n.Get(env, name)
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, Proxy{Var: name, Value: v})
		}
	}
	return out
}

// NoProxy returns the parent's effective NO_PROXY list using curl's rule:
// a non-empty lowercase no_proxy wins, else NO_PROXY. (Go's
// golang.org/x/net/http/httpproxy checks NO_PROXY first; the two only
// disagree when both are set and differ, which is exactly the stale-variable
// case Rewrite removes by writing both with the same value.) For the
// no-proxy rules of the ordering use NoProxyEntries, which takes the union
// of both. Native rule.
func NoProxy(env []string) string { return Native.NoProxy(env) }

// NoProxy is [NoProxy] under rule n (on Windows both names are one variable).
func (n Names) NoProxy(env []string) string {
	if v, _ := n.Get(env, "no_proxy"); v != "" {
		return v
	}
	v, _ := n.Get(env, "NO_PROXY")
	return v
}

// NoProxyEntries returns the union of the entries of no_proxy and NO_PROXY
// (in that order, curl's precedence), split on commas, spaces trimmed, empty
// entries dropped, deduplicated case-insensitively with the first spelling
// kept (SPEC ORD-3b). Native rule.
func NoProxyEntries(env []string) []string { return Native.NoProxyEntries(env) }

// NoProxyEntries is [NoProxyEntries] under rule n.
func (n Names) NoProxyEntries(env []string) []string {
	lower, _ := n.Get(env, "no_proxy")
	upper, _ := n.Get(env, "NO_PROXY")
	return mergeEntries(nil, lower, upper)
}

// mergeEntries appends the comma-separated entries of each list to dst,
// skipping blanks and entries already present (case-insensitive).
func mergeEntries(dst []string, lists ...string) []string {
	seen := make(map[string]bool, len(dst))
	for _, e := range dst {
		seen[strings.ToLower(e)] = true
	}
	for _, list := range lists {
		for _, e := range strings.Split(list, ",") {
			e = strings.TrimSpace(e)
			if e == "" || seen[strings.ToLower(e)] {
				continue
			}
			seen[strings.ToLower(e)] = true
			dst = append(dst, e)
		}
	}
	return dst
}
