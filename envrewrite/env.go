// Package envrewrite builds the child's environment for the launcher (SPEC
// ENV-1, ENV-2, POOL-20). Every function is pure: it takes an environment in
// the "KEY=VALUE" form os.Environ returns and gives back a new slice; the
// input is never modified and the process environment is never read.
//
// Keys are case-sensitive (POSIX): HTTPS_PROXY and https_proxy are two
// variables. An environment may hold a key more than once; as in os/exec
// (dedupEnv), the last occurrence wins. Entries without "=" are kept as they
// are and never treated as a key.
package envrewrite

import "strings"

// ProxyVars are the proxy variables in the order their values become
// candidates (SPEC GW-1, ENV-2). Rewrite sets all six (SPEC ENV-1).
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
// key occurs at all (an empty value still reports true).
func Get(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, ok := splitKey(env[i]); ok && k == key {
			return env[i][len(k)+1:], true
		}
	}
	return "", false
}

// Set returns a new slice in which every occurrence of key is removed and
// "key=value" is appended at the end, so exactly one occurrence remains.
// The other entries keep their order. env is not modified.
func Set(env []string, key, value string) []string {
	out := Unset(env, key)
	return append(out, key+"="+value)
}

// Unset returns a new slice without any occurrence of key. env is not
// modified.
func Unset(env []string, key string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, ok := splitKey(kv); ok && k == key {
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
	// validation and GW-3 warnings belong to the candidate parser).
	Value string
}

// ParentProxies returns the non-empty proxy variables of env in ProxyVars
// order (SPEC GW-1, ENV-2). It must be called on the parent's environment
// before Rewrite. The same value under two names is listed twice; duplicates
// are removed by host:port when candidates are built (SPEC GW-2).
func ParentProxies(env []string) []Proxy {
	var out []Proxy
	for _, name := range ProxyVars {
		v, _ := Get(env, name)
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
// case ENV-1 removes by writing both with the same value.) For the ORD-3b
// rules use NoProxyEntries, which takes the union of both.
func NoProxy(env []string) string {
	if v, _ := Get(env, "no_proxy"); v != "" {
		return v
	}
	v, _ := Get(env, "NO_PROXY")
	return v
}

// NoProxyEntries returns the union of the entries of no_proxy and NO_PROXY
// (in that order, curl's precedence), split on commas, spaces trimmed, empty
// entries dropped, deduplicated case-insensitively with the first spelling
// kept (SPEC ENV-1, ORD-3b).
func NoProxyEntries(env []string) []string {
	lower, _ := Get(env, "no_proxy")
	upper, _ := Get(env, "NO_PROXY")
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
