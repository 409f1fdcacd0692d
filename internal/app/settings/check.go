package settings

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
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
	// BoundPort is the port the listener bound (a gateway at this
	// port would loop back into the proxy; the listener may have fallen
	// back to a later port than listen-port); 0 before
	// the listener exists (the listen-port value is used).
	BoundPort int
	// NoProxy is the startup NO_PROXY union, part of the
	// prefer-direct rules.
	NoProxy string
	// EnvProxies are the startup environment's proxies, the
	// candidates after the gateways.
	EnvProxies []route.EnvProxy
	// StrictGateways makes every gateway the candidates would skip (it
	// does not parse, or it points at this listener) an error at its
	// item; the command line skips those with a warning (a start is not
	// lost to one bad item), a change of a running instance refuses them.
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
	if !env.StrictGateways {
		r.Warnings = append(r.Warnings, sameHostPort(v.List(Gateway))...)
	}
	if ign := r.Rules.Ignored(); len(ign) > 0 {
		r.Warnings = append(r.Warnings, "NO_PROXY entries ignored: "+strings.Join(ign, ","))
	}
	return r, nil
}

// value checks the value of k, whose Go type kind already checked, and
// puts what it resolves to into r: the log level, the health URL, the
// prefer-direct and prefer-proxy rules with env's NO_PROXY;
// gateways against env; ranges of ports, durations and counts.
// Errors are added to c.
func (c *checker) value(k Key, r *Resolved, env Env) {
	v := c.v
	switch k.Name {
	case ListenHost:
		c.listenHost()
	case LogLevel:
		if err := r.Level.UnmarshalText([]byte(v.String(LogLevel))); err != nil {
			c.add(LogLevel, "want debug, info, warn or error")
		}
	case LogFormat:
		if f := v.String(LogFormat); f != "text" && f != "json" {
			c.add(LogFormat, "want text or json")
		}
	case UpstreamURL:
		c.upstreamURL()
	case UpstreamHost:
		c.upstreamHost()
	case HealthURL:
		r.HealthURL = c.healthURL()
	case PreferDirect:
		direct, proxy := c.preferDirectCount(env.NoProxy), c.patternCount(PreferProxy)
		if direct && proxy {
			r.Rules = c.rules(env.NoProxy)
		}
	case PreferProxy:
		// Its count is checked with prefer-direct, whose rules need both.
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
// from it: it returns BuildCandidates' warnings, or the
// one error at the field it comes from, which is also the error when a
// gateway's CA file does not load.
func resolveCandidates(r *Resolved, env Env) ([]string, *FieldError) {
	v := r.Values
	port := env.BoundPort
	if port == 0 {
		port = v.Int(ListenPort)
	}
	// The first gateway: upstream-url when given, '' meaning
	// none; not given (nil), upstream-host:upstream-port, '' meaning none.
	host := v.String(UpstreamHost)
	if u, given := v[UpstreamURL].(string); given && u == "" {
		host = ""
	}
	r.Spec = route.CandidateSpec{
		UpstreamURL:  v.String(UpstreamURL),
		UpstreamHost: host,
		UpstreamPort: v.Int(UpstreamPort),
		Gateways:     v.List(Gateway),
		EnvProxies:   env.EnvProxies,
		ListenHost:   v.String(ListenHost),
		ListenPort:   port,
	}
	cands, warnings, err := route.BuildCandidates(r.Spec)
	if err != nil {
		// Not reached for a value value() passed; kept for a rule
		// BuildCandidates gains later, its message scrubbed the same way.
		field := UpstreamURL
		if r.Spec.UpstreamURL == "" {
			field = UpstreamHost
		}
		return nil, &FieldError{Field: field, Message: scrub(err.Error())}
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

// caFileError is the error of gateway cd whose CA file did not load: at
// upstream-url when it came from there, else at gateway, naming
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

// MaxNamedErrors is how many field errors a refused change or a refused
// file names; past it one more entry gives the count: an
// answer stays small whatever the request.
const MaxNamedErrors = 20

// maxNameBytes cuts a key name an error repeats.
const maxNameBytes = 64

// clipName is an unknown key's name as an error repeats it: at most
// maxNameBytes, control characters replaced.
func clipName(name string) string {
	if len(name) > maxNameBytes {
		name = strings.ToValidUTF8(name[:maxNameBytes], "") + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, name)
}

// bounded is fes cut to MaxNamedErrors, with one last entry (no field)
// giving how many there were in all when some were cut; unnamed are the
// errors found but never made into entries (unknown keys past the
// limit).
func bounded(fes []FieldError, unnamed int) []FieldError {
	total := len(fes)
	if unnamed > MaxNamedErrors {
		total += unnamed - MaxNamedErrors
	}
	if total <= MaxNamedErrors {
		return fes
	}
	out := slices.Clone(fes[:min(len(fes), MaxNamedErrors)])
	return append(out, FieldError{Message: fmt.Sprintf("%d errors in all; the first %d are listed", total, len(out))})
}

// checker collects the errors of one Check.
type checker struct {
	v    Values
	errs []FieldError
}

func (c *checker) add(field, format string, a ...any) {
	c.errs = append(c.errs, FieldError{Field: field, Message: fmt.Sprintf(format, a...)})
}

// has reports whether key is in the values (nil included).
func (c *checker) has(key string) bool { _, ok := c.v[key]; return ok }

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
		ok = ok || k.Optional && x == nil && c.has(k.Name)
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
			c.add(ListenHost, "want an IP address or localhost")
		}
	}
}

// healthURL checks health-url: empty (off) or an http(s) URL with a host
// and, when it names one, a port of 1-65535 (url.Parse takes any digits),
// whose password or query is not the mask the document shows
// (maskedPassword).
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
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			c.add(HealthURL, "the port must be 1-65535, got %s", port)
			return nil
		}
	}
	switch {
	case maskedPassword(h):
		c.add(HealthURL, "%s", strings.Replace(maskedPasswordMsg, "gateway (scheme, user, host and port)", "URL", 1))
		return nil
	case maskedQuery(h):
		c.add(HealthURL, "%s", maskedQueryMsg)
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

// MaxHostPatterns is the most host patterns prefer-direct or prefer-proxy
// may hold, from any source: a request's host is matched against the
// wildcard patterns one by one (10,000 cost about 0.25 ms a request,
// 100,000 about 5 ms), and a change holds the settings lock while they
// are parsed; a list kept by hand is tens to hundreds.
const MaxHostPatterns = 10000

// patternCount checks that the host list key holds at most
// MaxHostPatterns patterns, and reports whether it does.
func (c *checker) patternCount(key string) bool {
	n := len(c.v.List(key))
	if n <= MaxHostPatterns {
		return true
	}
	c.add(key, "at most %d host patterns, got %d", MaxHostPatterns, n)
	return false
}

// preferDirectCount checks that prefer-direct and the startup NO_PROXY
// union, which the rules match as one prefer-direct list, hold at most
// MaxHostPatterns patterns together, and reports whether they do: a
// NO_PROXY of the environment costs each request as much as the flag's
// patterns. The error names both sources' counts.
func (c *checker) preferDirectCount(noProxy string) bool {
	if noProxy == "" {
		return c.patternCount(PreferDirect)
	}
	n, env := len(c.v.List(PreferDirect)), 0
	for _, e := range strings.Split(noProxy, ",") {
		if strings.TrimSpace(e) != "" {
			env++
		}
	}
	if n+env <= MaxHostPatterns {
		return true
	}
	c.add(PreferDirect, "at most %d host patterns with NO_PROXY/no_proxy, got %d (%d from prefer-direct, %d from NO_PROXY/no_proxy)",
		MaxHostPatterns, n+env, n, env)
	return false
}

// rules parses prefer-direct and prefer-proxy; the error is
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
	// A host pattern is no secret: its error names it, so the one bad
	// pattern of several is found.
	c.add(field, "%v", err)
	return nil
}

// MaxGateways is the most gateways a settings change or start may name:
// each is a candidate tried in turn, and a longer list only
// holds the settings lock while it is checked.
const MaxGateways = 64

// gateways checks that every bare gateway names a port (host alone would
// silently mean host:80, rarely a proxy; a value with credentials is never
// echoed), that no password is the mask "***" (maskedPassword) and, under
// StrictGateways, that each is a candidate and that no two name one
// host:port: the proxy keeps the first of those and drops the others
// (SPEC GW-2), so such a list would not run as written; the error is at
// the later item and names the earlier one.
func (c *checker) gateways(env Env) {
	seen := map[string]int{}
	if n := len(c.v.List(Gateway)); n > MaxGateways {
		c.errs = append(c.errs, FieldError{Field: Gateway, Message: fmt.Sprintf("at most %d gateways, got %d", MaxGateways, n)})
		return
	}
	for i, g := range c.v.List(Gateway) {
		msg := portless(g)
		if maskedPassword(g) {
			msg = maskedPasswordMsg
		}
		if msg != "" {
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
		cd, err := route.ParseGateway(g, Gateway)
		if err != nil {
			c.add(fmt.Sprintf("%s[%d]", Gateway, i), "%s", scrub(err.Error()))
			continue
		}
		if j, dup := seen[cd.Addr]; dup {
			c.add(fmt.Sprintf("%s[%d]", Gateway, i), "names the host:port of %s[%d] (%s): the proxy uses the first of them only; "+
				"keep one (change its user, password or scheme in place)", Gateway, j, cd.Addr)
			continue
		}
		seen[cd.Addr] = i
		port := env.BoundPort
		if port == 0 {
			port = c.v.Int(ListenPort)
		}
		_, w, _ := route.BuildCandidates(route.CandidateSpec{Gateways: []string{g}, ListenHost: c.v.String(ListenHost), ListenPort: port})
		if len(w) > 0 {
			c.add(fmt.Sprintf("%s[%d]", Gateway, i), "points at this proxy's own listener")
		}
	}
}

// sameHostPort are the warnings of a start whose gateways name one
// host:port twice, one a line, passwords masked: the proxy keeps the first
// (SPEC GW-2), and a settings change refuses such a list (gateways), so
// any change is refused until one of them goes.
func sameHostPort(l []string) []string {
	var out []string
	seen := map[string]int{}
	for i, g := range l {
		cd, err := route.ParseGateway(g, Gateway)
		if err != nil {
			continue
		}
		if j, dup := seen[cd.Addr]; dup {
			out = append(out, fmt.Sprintf("skipping %s[%d] (%s): names the host:port of %s[%d]; the proxy uses the first only, and a settings change is refused until one of them goes",
				Gateway, i, route.RedactURL(strings.TrimSpace(g)), Gateway, j))
			continue
		}
		seen[cd.Addr] = i
	}
	return out
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
	example := "proxy.lan"
	if looksLikeHostName(g) {
		example = g
	}
	return "a gateway has no port (want host:port, e.g. " + example + ":8080, or an http:// URL)"
}

// looksLikeHostName reports whether s is a dotted host name or address
// of at most 64 bytes (or localhost), which an error may repeat as an
// example: a key pasted into the field is none (too long for a DNS
// label, or no dot), and is never repeated.
func looksLikeHostName(s string) bool {
	if len(s) > 64 || (s != "localhost" && !strings.Contains(s, ".")) {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if len(label) > 24 {
			return false
		}
	}
	_, err := route.NormalizeHost(s)
	return err == nil
}

// upstreamURL checks upstream-url whether or not it is in use: ” (no
// first gateway from it) or a gateway URL whose password is not the mask
// (maskedPassword); the message never repeats the value, which may hold a
// password.
func (c *checker) upstreamURL() {
	u := c.v.String(UpstreamURL)
	if u == "" {
		return
	}
	if hasControl(u) {
		c.add(UpstreamURL, "must not contain control characters or line breaks")
		return
	}
	if maskedPassword(u) {
		c.add(UpstreamURL, "%s", maskedPasswordMsg)
		return
	}
	if _, err := route.ParseGateway(u, UpstreamURL); err != nil {
		c.add(UpstreamURL, "%s", scrub(err.Error()))
	}
}

// upstreamHost checks upstream-host whether or not upstream-url overrides
// it: ” (no first gateway) or a host name or IP address alone. A
// user:password@ there would become a gateway's credentials that no
// document masks, and a line break a header.
func (c *checker) upstreamHost() {
	h := c.v.String(UpstreamHost)
	switch {
	case h == "":
		return
	case hasControl(h) || strings.ContainsAny(h, " \t"):
		c.add(UpstreamHost, "must not contain spaces, control characters or line breaks")
		return
	case strings.Contains(h, "@"):
		c.add(UpstreamHost, "want a host name or IP address alone: credentials go in upstream-url (http://user:pass@host:port)")
		return
	case strings.ContainsAny(h, "/?#"):
		c.add(UpstreamHost, "want a host name or IP address alone (a URL goes in upstream-url)")
		return
	}
	host := h
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if _, err := route.NormalizeHost(host); err != nil {
		c.add(UpstreamHost, "want a host name or IP address (a port goes in upstream-port)")
	}
}

// hasControl reports whether s holds an ASCII control character (CR, LF,
// NUL, DEL …).
func hasControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0
}

// scrub is an error message of proxy/route with every quoted part ("…",
// which repeats a value given) and a scheme that is no known one taken out:
// a settings error never repeats a value that may be a secret
// (SPEC OPS-7); the field names which value it is.
func scrub(msg string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			break
		}
		j := i + 1
		for j < len(msg) && msg[j] != '"' {
			if msg[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(msg) {
			break
		}
		b.WriteString(msg[:i])
		b.WriteString("(the value)")
		msg = msg[j+1:]
	}
	b.WriteString(msg)
	out := b.String()
	if scheme, rest, ok := strings.Cut(out, "://: "); ok && !strings.ContainsAny(scheme, " ") {
		out = rest
		if strings.HasPrefix(strings.ToLower(scheme), "socks4") {
			out = "socks4://: " + rest
		}
	}
	return out
}
