package cli

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/dual-proxy/dual-proxy/envrewrite"
)

// agentEndpoint is where an agent sends its model calls: the variable
// holding its base URL and its vendor's API when that is unset ("": none
// known, the agent needs the variable or a provider of the user's choice).
type agentEndpoint struct{ env, vendor string }

// agentEndpoints are the agents `dual-proxy run` recognises by the
// command's name, for the default health URL (SPEC RUN-1b): each one's
// base URL variable as its own documentation names it.
var agentEndpoints = map[string]agentEndpoint{
	"claude": {"ANTHROPIC_BASE_URL", defaultClaudeBase},
	"codex":  {"OPENAI_BASE_URL", "https://api.openai.com"},
	"gemini": {"GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com"},
	"qwen":   {"OPENAI_BASE_URL", ""},
}

// runHealthURL is `dual-proxy run`'s default health URL for the child
// argv0 under environ, and why it is that one: for an agent
// it recognises, the origin of its base URL variable when that is an
// http(s) URL, else its vendor's API; for any other command the general
// default, with the reason saying so.
func runHealthURL(argv0 string, environ []string) (u, why string) {
	name := strings.TrimSuffix(strings.ToLower(filepath.Base(argv0)), ".exe")
	ep, ok := agentEndpoints[name]
	if !ok {
		return defaultHealthURL, name + " is not an agent the launcher recognises: the general default, a public API; --health-url names the endpoint it really uses"
	}
	if o := originOf(environ, ep.env); o != "" {
		return o, name + ": the origin of $" + ep.env
	}
	if ep.vendor == "" {
		return defaultHealthURL, name + ": $" + ep.env + " is unset and its provider is the user's choice: the general default; --health-url names the endpoint it really uses"
	}
	return ep.vendor, name + ": its vendor's API ($" + ep.env + " unset)"
}

// originOf is the scheme://host of the variable name in environ when it
// holds an http(s) URL, else "".
func originOf(environ []string, name string) string {
	base, ok := envrewrite.Get(environ, name)
	if !ok || base == "" {
		return ""
	}
	if u, err := url.Parse(base); err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") {
		return u.Scheme + "://" + u.Host
	}
	return ""
}
