package settings

import (
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// ProxyConfig is the proxy.Config r describes, its candidates built for
// the listener's bound port boundPort (a gateway there would loop
// back into the proxy; 0: the port r
// was checked with), and the warnings of building them (skipped gateways,
// ignored NO_PROXY entries; one line each, redacted). Every key sets its
// part through its Key.Proxy, which keeps the key's meaning of 0 (a
// tunnel bound's or pref-ttl-ms's 0, "never" or "no cache", is the
// Config's negative value; zero there means the default); the resolved
// forms (candidates, rules, health URL) come from Check, and Settings
// are the values as shown (Shown). Handler, Logger and the TLS bases are
// the caller's to set.
func (r *Resolved) ProxyConfig(boundPort int) (proxy.Config, []string, error) {
	spec := r.Spec
	if boundPort != 0 {
		spec.ListenPort = boundPort
	}
	cands, warnings, err := route.BuildCandidates(spec)
	if err != nil {
		return proxy.Config{}, nil, err
	}
	if ign := r.Rules.Ignored(); len(ign) > 0 {
		warnings = append(warnings, "NO_PROXY entries ignored: "+strings.Join(ign, ","))
	}
	cfg := proxy.Config{
		Candidates: cands,
		Rules:      r.Rules,
		HealthURL:  r.HealthURL,
		Settings:   r.Shown(boundPort),
	}
	for _, k := range Keys {
		if k.Proxy != nil {
			k.Proxy(&cfg, r.Values[k.Name])
		}
	}
	return cfg, warnings, nil
}

// toMS is the Key.Proxy of a millisecond key whose 0 means in
// proxy.Config what it means for the key (ConnectTimeout and the others
// whose 0 the key refuses; RaceDelay's and Cooldown's "off",
// HealthInterval's "only after failures").
func toMS(field func(*proxy.Config) *time.Duration) func(*proxy.Config, any) {
	return func(c *proxy.Config, x any) { *field(c) = time.Duration(x.(int)) * time.Millisecond }
}

// toMSNone is the Key.Proxy of a millisecond key whose 0 means "never" or
// "no cache": proxy.Config spells that as a negative duration (its 0 is
// the proxy's default), so 0 means the same from every source.
func toMSNone(field func(*proxy.Config) *time.Duration) func(*proxy.Config, any) {
	return func(c *proxy.Config, x any) {
		d := time.Duration(x.(int)) * time.Millisecond
		if d == 0 {
			d = -1
		}
		*field(c) = d
	}
}

// toCount is the Key.Proxy of a count.
func toCount(field func(*proxy.Config) *int) func(*proxy.Config, any) {
	return func(c *proxy.Config, x any) { *field(c) = x.(int) }
}

// toBool is the Key.Proxy of a switch.
func toBool(field func(*proxy.Config) *bool) func(*proxy.Config, any) {
	return func(c *proxy.Config, x any) { *field(c) = x.(bool) }
}

// Shown are r's values as every document shows them (the settings
// document, the status document's settings, --print-config): every key of
// Keys by name, credentials masked (Mask); listen-port is boundPort when
// the listener is bound (not 0).
func (r *Resolved) Shown(boundPort int) map[string]any {
	out := make(map[string]any, len(Keys))
	for _, k := range Keys {
		out[k.Name] = mask(k.Name, r.Values[k.Name])
	}
	if boundPort != 0 {
		out[ListenPort] = boundPort
	}
	return out
}
