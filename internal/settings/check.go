package settings

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/dial"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// FieldError is one bad setting: Field is the key ("cooldown-ms"), for a
// list item with its 0-based index ("gateway[1]"); Message says what is
// wrong and never contains a password.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is "FIELD: MESSAGE".
func (e FieldError) Error() string { return e.Field + ": " + e.Message }

// Env is what checking needs besides the values: the parts of the
// instance's start that do not change.
type Env struct {
	// BoundPort is the port the listener bound (SPEC GW-2 self-loop
	// protection; LIS-1 may have fallen back to a later one); 0 before
	// the listener exists (the listen-port value is used).
	BoundPort int
	// NoProxy is the startup NO_PROXY union (SPEC ORD-3b), part of the
	// prefer-direct rules.
	NoProxy string
	// EnvProxies are the startup environment's proxies (SPEC GW-1), the
	// candidates after the gateways.
	EnvProxies []route.EnvProxy
	// StrictGateways makes every gateway the candidates would skip (it
	// does not parse, or it points at this listener) an error at its
	// item; the command line skips those with a warning (SPEC GW-3), a
	// change of a running instance refuses them.
	StrictGateways bool
}

// Resolved is a checked set of values in the forms the proxy takes.
type Resolved struct {
	Values Values
	// Spec gives the candidates (route.BuildCandidates); its ListenPort
	// is Env.BoundPort or the listen-port value.
	Spec      route.CandidateSpec
	Rules     *route.Rules
	Level     slog.Level
	HealthURL *url.URL // nil: health checks off
	// Warnings are BuildCandidates' and the ignored NO_PROXY entries,
	// one line each, credentials redacted.
	Warnings []string
}

// Check validates a complete set of values and returns them resolved, or
// every error found, in the order of Keys (the command line reports the
// first). A value of the wrong Go type is an error at its key.
func Check(v Values, env Env) (*Resolved, []FieldError) {
	c := &checker{v: v}
	for _, k := range Keys {
		c.kind(k)
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	r := &Resolved{Values: v}
	for _, k := range Keys {
		c.value(k, r, env)
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	warnings, ferr := resolveCandidates(r, env)
	if ferr != nil {
		return nil, []FieldError{*ferr}
	}
	r.Warnings = warnings
	if ign := r.Rules.Ignored(); len(ign) > 0 {
		r.Warnings = append(r.Warnings, "NO_PROXY entries ignored: "+strings.Join(ign, ","))
	}
	return r, nil
}

// value checks the value of k, whose Go type kind already checked, and
// puts what it resolves to into r: the log level, the health URL, the
// prefer-direct and prefer-proxy rules with env's NO_PROXY (SPEC ORD-3b);
// gateways against env (GW-3); ranges of ports, durations and counts.
// Errors are added to c.
func (c *checker) value(k Key, r *Resolved, env Env) {
	v := c.v
	switch k.Name {
	case ListenHost:
		c.listenHost()
	case LogLevel:
		if err := r.Level.UnmarshalText([]byte(v.String(LogLevel))); err != nil {
			c.add(LogLevel, "want debug, info, warn or error, got %q", v.String(LogLevel))
		}
	case LogFormat:
		if f := v.String(LogFormat); f != "text" && f != "json" {
			c.add(LogFormat, "want text or json, got %q", f)
		}
	case HealthURL:
		r.HealthURL = c.healthURL()
	case PreferDirect:
		r.Rules = c.rules(env.NoProxy)
	case Gateway:
		c.gateways(env)
	case ListenPort:
		if p := v.Int(ListenPort); p < 0 || p > 65535 {
			c.add(ListenPort, "must be 0-65535 (0: any free port), got %d", p)
		}
	default:
		if k.Kind == KindMS || k.Kind == KindCount {
			c.bounds(k)
		}
	}
}

// resolveCandidates sets r.Spec from r's values and env (its ListenPort
// is env.BoundPort when the listener is bound) and builds the candidates
// from it (SPEC GW-1..GW-3): it returns BuildCandidates' warnings, or the
// one error at the field it comes from, which is also the error when a
// gateway's CA file (SPEC GW-6) does not load.
func resolveCandidates(r *Resolved, env Env) ([]string, *FieldError) {
	v := r.Values
	port := env.BoundPort
	if port == 0 {
		port = v.Int(ListenPort)
	}
	r.Spec = route.CandidateSpec{
		UpstreamURL:  v.String(UpstreamURL),
		UpstreamHost: v.String(UpstreamHost),
		UpstreamPort: v.Int(UpstreamPort),
		Gateways:     v.List(Gateway),
		EnvProxies:   env.EnvProxies,
		ListenHost:   v.String(ListenHost),
		ListenPort:   port,
	}
	cands, warnings, err := route.BuildCandidates(r.Spec)
	if err != nil {
		field := UpstreamURL
		if r.Spec.UpstreamURL == "" {
			field = UpstreamHost
		}
		return nil, &FieldError{Field: field, Message: err.Error()}
	}
	for _, cd := range cands {
		if cd.CAFile == "" {
			continue
		}
		if _, err := dial.LoadCAFile(cd.CAFile); err != nil {
			return nil, caFileError(cd, err)
		}
	}
	return warnings, nil
}

// caFileError is the error of gateway cd whose CA file did not load (SPEC
// GW-6): at upstream-url when it came from there, else at gateway, naming
// the environment variable of a gateway taken from the environment.
func caFileError(cd candidate.Candidate, err error) *FieldError {
	field, msg := Gateway, fmt.Sprintf("%s: %v", cd.String(), err)
	switch {
	case cd.Source == "upstream-url":
		field = UpstreamURL
	case strings.HasPrefix(cd.Source, "env:"):
		msg = fmt.Sprintf("%s (from %s): %v", cd.String(), strings.TrimPrefix(cd.Source, "env:"), err)
	}
	return &FieldError{Field: field, Message: msg}
}

// checker collects the errors of one Check.
type checker struct {
	v    Values
	errs []FieldError
}

func (c *checker) add(field, format string, a ...any) {
	c.errs = append(c.errs, FieldError{Field: field, Message: fmt.Sprintf(format, a...)})
}

// kind checks that key k holds a value of its kind's Go type.
func (c *checker) kind(k Key) {
	x, ok := c.v[k.Name]
	switch k.Kind {
	case KindMS, KindCount:
		_, ok = x.(int)
	case KindBool:
		_, ok = x.(bool)
	case KindString:
		_, ok = x.(string)
	case KindList:
		_, ok = x.([]string)
	}
	if !ok {
		c.add(k.Name, "missing or of the wrong type")
	}
}

// listenHost checks listen-host: an IP address or localhost.
func (c *checker) listenHost() {
	host := c.v.String(ListenHost)
	if host == "" {
		c.add(ListenHost, "must not be empty")
		return
	}
	if h := strings.Trim(host, "[]"); h != "localhost" {
		if _, err := netip.ParseAddr(h); err != nil {
			c.add(ListenHost, "want an IP address or localhost, got %q", host)
		}
	}
}

// healthURL checks health-url: empty (off) or an http(s) URL with a host.
func (c *checker) healthURL() *url.URL {
	h := c.v.String(HealthURL)
	if h == "" {
		return nil
	}
	u, err := url.Parse(h)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.add(HealthURL, "want an http:// or https:// URL, or '' to turn it off")
		return nil
	}
	return u
}

// bounds checks a number against its key's range.
func (c *checker) bounds(k Key) {
	n := c.v.Int(k.Name)
	switch {
	case k.Name == HealthRecover && n < k.Min:
		c.add(k.Name, "must be >= 1")
	case n < k.Min || n > k.Max:
		c.add(k.Name, "must be %d-%d, got %d", k.Min, k.Max, n)
	}
}

// rules parses prefer-direct and prefer-proxy (SPEC ORD-3); the error is
// at the list that holds the bad pattern.
func (c *checker) rules(noProxy string) *route.Rules {
	pd, pp := c.v.List(PreferDirect), c.v.List(PreferProxy)
	rules, err := route.ParseRules(pd, pp, noProxy)
	if err == nil {
		return rules
	}
	field := PreferDirect
	if _, e2 := route.ParseRules(pd, nil, ""); e2 == nil {
		field = PreferProxy
	}
	c.add(field, "%v", err)
	return nil
}

// MaxGateways is the most gateways a settings change or start may name
// (SPEC OPS-7): each is a candidate tried in turn, and a longer list only
// holds the settings lock while it is checked.
const MaxGateways = 64

// gateways checks that every bare gateway names a port (host alone would
// silently mean host:80, rarely a proxy; a value with credentials is never
// echoed) and, under StrictGateways, that each is a candidate.
func (c *checker) gateways(env Env) {
	if n := len(c.v.List(Gateway)); n > MaxGateways {
		c.errs = append(c.errs, FieldError{Field: Gateway, Message: fmt.Sprintf("at most %d gateways, got %d", MaxGateways, n)})
		return
	}
	for i, g := range c.v.List(Gateway) {
		if msg := portless(g); msg != "" {
			field := Gateway
			if env.StrictGateways {
				field = fmt.Sprintf("%s[%d]", Gateway, i)
			}
			c.errs = append(c.errs, FieldError{Field: field, Message: msg})
			if !env.StrictGateways {
				return
			}
			continue
		}
		if !env.StrictGateways {
			continue
		}
		if _, err := route.ParseGateway(g, Gateway); err != nil {
			c.add(fmt.Sprintf("%s[%d]", Gateway, i), "%s: %v", route.RedactURL(g), err)
			continue
		}
		port := env.BoundPort
		if port == 0 {
			port = c.v.Int(ListenPort)
		}
		_, w, _ := route.BuildCandidates(route.CandidateSpec{Gateways: []string{g}, ListenHost: c.v.String(ListenHost), ListenPort: port})
		if len(w) > 0 {
			c.add(fmt.Sprintf("%s[%d]", Gateway, i), "%s: points at this proxy's own listener", route.RedactURL(g))
		}
	}
}

// portless is the error for a bare gateway without a port, "" when g is
// fine in that respect (URLs keep their scheme's default port).
func portless(g string) string {
	if strings.Contains(g, "://") {
		return ""
	}
	hostport := g[strings.LastIndex(g, "@")+1:]
	if _, port, err := net.SplitHostPort(hostport); err == nil && port != "" {
		return ""
	}
	if hostport != g {
		return "a gateway has no port (want [user:pass@]host:port or an http:// URL)"
	}
	example := "host:8080"
	if !strings.ContainsAny(g, ":[]") {
		example = g + ":8080"
	}
	return fmt.Sprintf("%q has no port (want host:port, e.g. %s, or an http:// URL)", g, example)
}
