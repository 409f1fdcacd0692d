package settings

import (
	"strings"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// ProxyConfig is the proxy.Config r describes, its candidates built for
// the listener's bound port boundPort (SPEC GW-2 self-loop; 0: the port r
// was checked with), and the warnings of building them (skipped gateways,
// ignored NO_PROXY entries; one line each, redacted). The command line's
// "0" of a tunnel bound or of pref-ttl-ms ("never", "no cache") becomes
// the Config's negative value (zero there means the default). Handler,
// Logger and the TLS bases are the caller's to set.
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
	v := r.Values
	return proxy.Config{
		Candidates:                  cands,
		Rules:                       r.Rules,
		ConnectTimeout:              msOf(v, TimeoutMS),
		FastFail:                    msOf(v, FastFailMS),
		ResponseTimeout:             msOf(v, ResponseTimeout),
		RaceDelay:                   msOf(v, RaceDelayMS),
		TunnelIdleTimeout:           offIfZero(msOf(v, TunnelIdleMS)),
		TunnelHalfCloseTimeout:      offIfZero(msOf(v, TunnelHalfMS)),
		HeadTimeout:                 msOf(v, HeadTimeoutMS),
		TLSProbe:                    v.Bool(VerifyTLS),
		Cooldown:                    msOf(v, CooldownMS),
		PrefTTL:                     offIfZero(msOf(v, PrefTTLMS)),
		HealthURL:                   r.HealthURL,
		HealthInterval:              msOf(v, HealthInterval),
		HealthRecoverCount:          v.Int(HealthRecover),
		LoopbackDirect:              v.Bool(LoopbackDirect),
		RetryNonIdempotentAfterSend: v.Bool(RetryAfterSend),
		RetryWithIdempotencyKey:     v.Bool(RetryWithKey),
		Settings:                    r.Shown(boundPort),
	}, warnings, nil
}

// msOf is key's value as a duration (its unit is ms).
func msOf(v Values, key string) time.Duration { return time.Duration(v.Int(key)) * time.Millisecond }

// offIfZero maps a setting's 0 ("never") to proxy.Config's "no bound"
// (negative).
func offIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
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
