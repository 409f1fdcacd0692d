package cli

import (
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/envrewrite"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// maxMS bounds every millisecond flag (one week), far below the
// time.Duration overflow.
const maxMS = 7 * 24 * 3600 * 1000

// resolve reads and validates the flags of c: one step per group of
// settings, in the order their errors are reported (the first bad value
// is the one named, SPEC LIS-5).
func resolve(c *cli.Context, m mode, environ []string) (*Settings, error) {
	s := &Settings{
		Mode:            m,
		ListenHost:      c.String(fListenHost),
		ListenPort:      c.Int(fListenPort),
		PortFallback:    c.Int(fPortFallback),
		LoopbackDirect:  c.Bool(fLoopbackDirect),
		ConnectTimeout:  time.Duration(c.Int(fTimeoutMS)) * time.Millisecond,
		ResponseTimeout: time.Duration(c.Int(fResponseTimeout)) * time.Millisecond,
		HealthURL:       c.String(fHealthURL),
		RetryAfterSend:  c.Bool(fRetryAfterSend),
		RetryWithKey:    c.Bool(fRetryWithKey),
		LogFormat:       c.String(fLogFormat),
		Env:             environ,
	}
	for _, step := range []func(*cli.Context, *Settings) error{
		resolveListenPorts,
		resolveConnectTimeouts,
		resolveListenHost,
		resolveLog,
		resolveHealthURL,
		resolveTimers,
		resolveHealthRecover,
		resolveRules,
		resolveCandidates,
		resolveLauncher,
		resolvePool,
	} {
		if err := step(c, s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// resolveListenPorts checks the listener's host is given and its port and
// fallback count are in range (SPEC LIS-1).
func resolveListenPorts(_ *cli.Context, s *Settings) error {
	if s.ListenHost == "" {
		return usageError(fListenHost, "must not be empty")
	}
	if s.ListenPort < 0 || s.ListenPort > 65535 {
		return usageError(fListenPort, "must be 0-65535 (0: any free port), got %d", s.ListenPort)
	}
	if s.PortFallback < 0 || s.PortFallback > 1000 {
		return usageError(fPortFallback, "must be 0-1000, got %d", s.PortFallback)
	}
	return nil
}

// resolveConnectTimeouts checks the connect and response-header timeouts
// (ms, 1 to maxMS).
func resolveConnectTimeouts(c *cli.Context, _ *Settings) error {
	if v := c.Int(fTimeoutMS); v < 1 || v > maxMS {
		return usageError(fTimeoutMS, "must be 1-%d, got %d", maxMS, v)
	}
	if v := c.Int(fResponseTimeout); v < 1 || v > maxMS {
		return usageError(fResponseTimeout, "must be 1-%d, got %d", maxMS, v)
	}
	return nil
}

// resolveListenHost checks the listen host is an IP address or localhost.
func resolveListenHost(_ *cli.Context, s *Settings) error {
	if h := strings.Trim(s.ListenHost, "[]"); h != "localhost" {
		if _, err := netip.ParseAddr(h); err != nil {
			return usageError(fListenHost, "want an IP address or localhost, got %q", s.ListenHost)
		}
	}
	return nil
}

// resolveLog reads the log level and checks the log format.
func resolveLog(c *cli.Context, s *Settings) error {
	if err := s.LogLevel.UnmarshalText([]byte(c.String(fLogLevel))); err != nil {
		return usageError(fLogLevel, "want debug, info, warn or error, got %q", c.String(fLogLevel))
	}
	if s.LogFormat != "text" && s.LogFormat != "json" {
		return usageError(fLogFormat, "want text or json, got %q", s.LogFormat)
	}
	return nil
}

// resolveHealthURL checks the health check's URL: http(s) with a host, or
// "" for none (SPEC HC-1).
func resolveHealthURL(_ *cli.Context, s *Settings) error {
	if s.HealthURL != "" {
		u, err := url.Parse(s.HealthURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError(fHealthURL, "want an http:// or https:// URL, or '' to turn it off")
		}
	}
	return nil
}

// resolveTimers reads the millisecond flags of the candidates' timing:
// each flag, its least value and the setting it fills, checked in this
// order (at most maxMS).
func resolveTimers(c *cli.Context, s *Settings) error {
	for _, t := range []struct {
		flag string
		min  int
		dst  *time.Duration
	}{
		{fFastFailMS, 1, &s.FastFail},
		{fRaceDelayMS, 0, &s.RaceDelay},
		{fTunnelIdleMS, 0, &s.TunnelIdle},
		{fTunnelHalfMS, 0, &s.TunnelHalfClose},
		{fHeadTimeoutMS, 1, &s.HeadTimeout},
		{fPrefTTLMS, 0, &s.PrefTTL},
		{fCooldownMS, 0, &s.Cooldown},
		{fHealthInterval, 0, &s.HealthInterval},
	} {
		v := c.Int(t.flag)
		if v < t.min || v > maxMS {
			return usageError(t.flag, "must be %d-%d, got %d", t.min, maxMS, v)
		}
		*t.dst = time.Duration(v) * time.Millisecond
	}
	return nil
}

// resolveHealthRecover reads how many passing checks a failed candidate
// needs (SPEC HC-4).
func resolveHealthRecover(c *cli.Context, s *Settings) error {
	if s.HealthRecover = c.Int(fHealthRecover); s.HealthRecover < 1 {
		return usageError(fHealthRecover, "must be >= 1")
	}
	return nil
}

// resolveRules reads the TLS probe switch and the prefer-direct and
// prefer-proxy patterns, with NO_PROXY's entries (SPEC ORD-3, ORD-3b); a
// bad pattern names the flag it came from.
func resolveRules(c *cli.Context, s *Settings) error {
	s.VerifyTLS = c.Bool(fVerifyTLS) && !c.Bool(fNoVerifyTLS)
	s.PreferDirect = splitList(c.StringSlice(fPreferDirect))
	s.PreferProxy = splitList(c.StringSlice(fPreferProxy))
	rules, err := route.ParseRules(s.PreferDirect, s.PreferProxy, noProxyRules(s.Env))
	if err != nil {
		flag := fPreferDirect
		if _, e2 := route.ParseRules(s.PreferDirect, nil, ""); e2 == nil {
			flag = fPreferProxy
		}
		return usageError(flag, "%v", err)
	}
	s.Rules = rules
	return nil
}

// resolveCandidates reads the gateways (the upstream, --gateway, the
// parent's proxy variables) into s.Spec and checks that the candidates
// build and that every https gateway's CA file loads (SPEC GW-1..GW-6).
func resolveCandidates(c *cli.Context, s *Settings) error {
	up := c.Int(fUpstreamPort)
	if up < 1 || up > 65535 {
		return usageError(fUpstreamPort, "must be 1-65535, got %d", up)
	}
	gws := splitList(c.StringSlice(fGateway))
	if err := checkGatewayPorts(gws); err != nil {
		return err
	}
	var envProxies []route.EnvProxy
	for _, p := range envrewrite.ParentProxies(s.Env) {
		envProxies = append(envProxies, route.EnvProxy{Var: p.Var, Value: p.Value})
	}
	s.Spec = route.CandidateSpec{
		UpstreamURL:  c.String(fUpstreamURL),
		UpstreamHost: c.String(fUpstreamHost),
		UpstreamPort: up,
		Gateways:     gws,
		EnvProxies:   envProxies,
		ListenHost:   s.ListenHost,
		ListenPort:   s.ListenPort,
	}
	cands, _, err := route.BuildCandidates(s.Spec)
	if err != nil {
		flag := fUpstreamURL
		if s.Spec.UpstreamURL == "" {
			flag = fUpstreamHost
		}
		return usageError(flag, "%v", err)
	}
	return checkGatewayCAs(cands)
}

// resolveLauncher reads a launcher's own settings (nothing for the
// standalone proxy): the log file, the kill delay and the child's command;
// claude-dual-proxy's starts with --command and its health check defaults
// to the agent's own endpoint (SPEC RUN-1, RUN-1b).
func resolveLauncher(c *cli.Context, s *Settings) error {
	if s.Mode == modeServe {
		return nil
	}
	s.LogFile = c.String(fLogFile)
	if s.LogFile == "" {
		s.LogFile = defaultLogFile(s.Env)
	}
	ka := c.Int(fKillAfterMS)
	if ka < 1 || ka > maxMS {
		return usageError(fKillAfterMS, "must be 1-%d, got %d", maxMS, ka)
	}
	s.KillAfter = time.Duration(ka) * time.Millisecond
	s.Command = c.Args().Slice()
	if s.Mode != modeClaude {
		if len(s.Command) == 0 && !c.Bool(fPrintConfig) {
			return cli.Exit("dual-proxy run: missing command; usage: dual-proxy run [flags] -- CMD [ARGS...]", 2)
		}
		return nil
	}
	cmd := c.String(fCommand)
	if cmd == "" {
		return usageError(fCommand, "must not be empty")
	}
	s.Command = append([]string{cmd}, s.Command...)
	// SPEC RUN-1b: prove the path the agent really uses.
	if !c.IsSet(fHealthURL) {
		s.HealthURL = claudeHealthURL(s.Env)
	}
	return nil
}

// claudeHealthURL is claude-dual-proxy's default health check: the origin
// of $ANTHROPIC_BASE_URL when it is an http(s) URL, else Anthropic's API
// (SPEC RUN-1b).
func claudeHealthURL(environ []string) string {
	if base, ok := envrewrite.Get(environ, "ANTHROPIC_BASE_URL"); ok && base != "" {
		if u, err := url.Parse(base); err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") {
			return u.Scheme + "://" + u.Host
		}
	}
	return defaultClaudeBase
}
