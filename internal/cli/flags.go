// Package cli builds the command lines of dual-proxy and
// claude-dual-proxy: flags (each also read from its environment variable,
// SPEC §7-§8), parsed and validated in one place into a Settings value
// (SPEC LIS-5: invalid values exit 2 with one line naming the flag), and
// the command tree that runs them (app.go). Its subpackages do one job
// each and know nothing of this package: complete (shell completion),
// statusview (what status and pool test print), hint (usage messages that
// say what to type instead), agentconf (the agents' own
// configuration files that undo the launcher), manpage (the man pages).
package cli

import (
	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/cli/hint"
)

// Flag names shared by the serve, run and claude commands.
const (
	fListenHost       = "listen-host"
	fListenPort       = "listen-port"
	fPortFallback     = "port-fallback"
	fUpstreamURL      = "upstream-url"
	fUpstreamHost     = "upstream-host"
	fUpstreamPort     = "upstream-port"
	fGateway          = "gateway"
	fLoopbackDirect   = "loopback-direct"
	fTimeoutMS        = "timeout-ms"
	fResponseTimeout  = "response-timeout-ms"
	fHealthURL        = "health-url"
	fRetryAfterSend   = "retry-non-idempotent-after-send"
	fRetryWithKey     = "retry-non-idempotent-with-idempotency-key"
	fLogLevel         = "log-level"
	fLogFormat        = "log-format"
	fLogFile          = "log-file"
	fPrintConfig      = "print-config"
	fKillAfterMS      = "kill-after-ms"
	fCommand          = "command"
	fPreferDirect     = "prefer-direct"
	fPreferProxy      = "prefer-proxy"
	fFastFailMS       = "fast-fail-ms"
	fPrefTTLMS        = "pref-ttl-ms"
	fCooldownMS       = "cooldown-ms"
	fVerifyTLS        = "verify-tls"
	fNoVerifyTLS      = "no-verify-tls"
	fHealthInterval   = "health-interval-ms"
	fHealthRecover    = "health-recover-count"
	fRaceDelayMS      = "race-delay-ms"
	fTunnelIdleMS     = "tunnel-idle-timeout-ms"
	fTunnelHalfMS     = "tunnel-half-close-timeout-ms"
	fHeadTimeoutMS    = "head-timeout-ms"
	defaultHealthURL  = "https://api.deepseek.com"
	defaultClaudeBase = "https://api.anthropic.com"
)

// mode selects per-command defaults (SPEC LIS-1: 7898 and no fallback for
// the standalone proxy, 7896 and 10 fallback ports for the launchers).
type mode int

const (
	modeServe mode = iota
	modeRun
	modeClaude
)

// hintKind is what a command of mode m runs, as its usage hints name it.
func (m mode) hintKind() hint.Kind {
	switch m {
	case modeRun:
		return hint.Run
	case modeClaude:
		return hint.Claude
	}
	return hint.Serve
}

// standalonePort is the standalone proxy's default port (SPEC LIS-1);
// launchers never fall back onto it.
const standalonePort = 7898

// proxyFlags are the flags of every command that runs a proxy.
func proxyFlags(m mode) []cli.Flag {
	port, fallback := standalonePort, 0
	if m != modeServe {
		port, fallback = 7896, 10
	}
	fs := []cli.Flag{
		&cli.StringFlag{Name: fListenHost, Value: "127.0.0.1", EnvVars: []string{"LISTEN_HOST"}, Usage: "address to listen on (non-loopback logs a warning: open proxy)"},
		&cli.IntFlag{Name: fListenPort, Value: port, EnvVars: []string{"LISTEN_PORT"}, Usage: "port to listen on"},
		&cli.IntFlag{Name: fPortFallback, Value: fallback, EnvVars: []string{"PORT_FALLBACK"}, Usage: "when the port is busy, try this many following ports"},
		&cli.StringFlag{Name: fUpstreamURL, EnvVars: []string{"UPSTREAM_URL"}, Usage: "first gateway as http://, https://, socks5:// or socks5h://[user:pass@]host:port (https: /?ca=FILE; overrides --upstream-host/--upstream-port; '' = no first gateway)"},
		&cli.StringFlag{Name: fUpstreamHost, Value: "127.0.0.1", EnvVars: []string{"UPSTREAM_HOST"}, Usage: "first gateway host when --upstream-url is not given ('' = no first gateway)"},
		&cli.IntFlag{Name: fUpstreamPort, Value: 7897, EnvVars: []string{"UPSTREAM_PORT"}, Usage: "first gateway port"},
		&cli.StringSliceFlag{Name: fGateway, EnvVars: []string{"GATEWAY"}, Usage: "extra gateway host:port or http://, https://, socks5://, socks5h:// URL (repeatable; env comma-separated)"},
		&cli.BoolFlag{Name: fLoopbackDirect, Value: true, EnvVars: []string{"LOOPBACK_DIRECT"}, Usage: "dial loopback destinations direct, never through a gateway"},
		&cli.IntFlag{Name: fTimeoutMS, Value: 5000, EnvVars: []string{"TIMEOUT_MS"}, Usage: "connect timeout per candidate (ms)"},
		&cli.IntFlag{Name: fResponseTimeout, Value: 60000, EnvVars: []string{"RESPONSE_TIMEOUT_MS"}, Usage: "wait for response headers (ms)"},
		&cli.IntFlag{Name: fFastFailMS, Value: 2000, EnvVars: []string{"FAST_FAIL_MS"}, Usage: "connect timeout when the first candidate comes from the cache or the health preference (ms)"},
		&cli.IntFlag{Name: fRaceDelayMS, Value: 250, EnvVars: []string{"RACE_DELAY_MS"}, Usage: "start the next candidate in parallel when a path is not open after this long (ms, 0 = off)"},
		&cli.IntFlag{Name: fTunnelIdleMS, Value: 3600000, EnvVars: []string{"TUNNEL_IDLE_TIMEOUT_MS"}, Usage: "close a CONNECT tunnel with no byte either way for this long (ms, 0 = never)"},
		&cli.IntFlag{Name: fTunnelHalfMS, Value: 60000, EnvVars: []string{"TUNNEL_HALF_CLOSE_TIMEOUT_MS"}, Usage: "close a tunnel one side of which has closed once the other is silent this long (ms, 0 = never)"},
		&cli.IntFlag{Name: fHeadTimeoutMS, Value: 10000, EnvVars: []string{"HEAD_TIMEOUT_MS"}, Usage: "a request head must arrive within this long of the connection or of its first byte (ms)"},
		&cli.BoolFlag{Name: fVerifyTLS, Value: true, EnvVars: []string{"VERIFY_TLS"}, Usage: "TLS-probe port 443 paths before opening a tunnel on a cache miss"},
		&cli.BoolFlag{Name: fNoVerifyTLS, Usage: "same as --verify-tls=false"},
		&cli.StringSliceFlag{Name: fPreferDirect, EnvVars: []string{"PREFER_DIRECT"}, Usage: "host patterns that try direct first (*.example.com, comma-separated)"},
		&cli.StringSliceFlag{Name: fPreferProxy, EnvVars: []string{"PREFER_PROXY"}, Usage: "host patterns that try direct last"},
		&cli.IntFlag{Name: fPrefTTLMS, Value: 60000, EnvVars: []string{"PREF_TTL_MS"}, Usage: "how long a host remembers the candidate that served it (ms)"},
		&cli.IntFlag{Name: fCooldownMS, Value: 30000, EnvVars: []string{"COOLDOWN_MS"}, Usage: "how long a failed candidate is tried last (ms, 0 = off)"},
		healthFlag(m),
		&cli.IntFlag{Name: fHealthInterval, Value: 60000, EnvVars: []string{"HEALTH_INTERVAL_MS"}, Usage: "health check period (ms, 0 = only after failures)"},
		&cli.IntFlag{Name: fHealthRecover, Value: 2, EnvVars: []string{"HEALTH_RECOVER_COUNT"}, Usage: "passing checks a failed candidate needs to be preferred again"},
		&cli.BoolFlag{Name: fRetryAfterSend, EnvVars: []string{"RETRY_NON_IDEMPOTENT_AFTER_SEND"}, Usage: "replay POST/PATCH even after they may have reached the origin"},
		&cli.BoolFlag{Name: fRetryWithKey, EnvVars: []string{"RETRY_NON_IDEMPOTENT_WITH_IDEMPOTENCY_KEY"}, Usage: "replay non-idempotent requests that carry Idempotency-Key / X-Idempotency-Key"},
		&cli.StringFlag{Name: fLogLevel, Value: "info", EnvVars: []string{"LOG_LEVEL"}, Usage: "debug | info | warn | error"},
		&cli.StringFlag{Name: fLogFormat, Value: "text", EnvVars: []string{"LOG_FORMAT"}, Usage: "text | json"},
		controlTokenFlag(),
		&cli.BoolFlag{Name: fPrintConfig, Aliases: []string{"dry-run"}, Usage: "print the resolved configuration (credentials redacted) and exit"},
	}
	if m != modeServe {
		fs = append(fs,
			&cli.StringFlag{Name: fLogFile, TakesFile: true, EnvVars: []string{"DUAL_PROXY_LOG_FILE"}, Usage: "launcher log file (default " + logHint + ")"},
			&cli.IntFlag{Name: fKillAfterMS, Value: 5000, EnvVars: []string{"KILL_AFTER_MS"}, Usage: "SIGKILL the child this long after a forwarded SIGTERM/SIGHUP (ms)"},
		)
	}
	fs = append(fs, poolFlags(m)...)
	if m == modeClaude {
		fs = append(fs, &cli.StringFlag{Name: fCommand, Value: "claude", EnvVars: []string{"CLAUDE_COMMAND"}, Usage: "the Claude Code executable"})
	}
	return namesOnce(fs)
}

// namesOnce replaces each *cli.IntFlag, *cli.BoolFlag, *cli.StringFlag and
// *cli.StringSliceFlag of fs by a wrapper (intFlag, boolFlag, stringFlag,
// stringSliceFlag) whose names are computed once.
//
// urfave/cli v2 recomputes a flag's names (one regexp run per name,
// cli.FlagNames) every time it asks, and while parsing it looks up every
// flag that was not given by walking the flag list (runFlagActions → IsSet
// → lookupFlag): O(flags²) regexp runs, ≈ 1 ms of every start with ≈ 45
// flags (the launcher start time of docs/BENCHMARKS.md). Every other method is the embedded flag's, so urfave/cli
// parses, prints help and man pages as before; its own type switches on
// *BoolFlag (help's default text, completion of hidden flags) see the
// embedded flag through String or do not apply (no flag here is Hidden or
// has DisableDefaultText). The type switches here look through a wrapper
// with unwrapFlag.
func namesOnce(fs []cli.Flag) []cli.Flag {
	for i, f := range fs {
		switch v := f.(type) {
		case *cli.IntFlag:
			fs[i] = intFlag{IntFlag: v, names: cachedNames(v.Name, v.Aliases)}
		case *cli.BoolFlag:
			fs[i] = boolFlag{BoolFlag: v, names: cachedNames(v.Name, v.Aliases)}
		case *cli.StringFlag:
			fs[i] = stringFlag{StringFlag: v, names: cachedNames(v.Name, v.Aliases)}
		case *cli.StringSliceFlag:
			fs[i] = stringSliceFlag{StringSliceFlag: v, names: cachedNames(v.Name, v.Aliases)}
		}
	}
	return fs
}

// cachedNames is cli.FlagNames with a full slice (an append by a caller
// cannot write into the shared array).
func cachedNames(name string, aliases []string) []string {
	names := cli.FlagNames(name, aliases)
	return names[:len(names):len(names)]
}

// The wrappers of namesOnce: a urfave/cli flag whose Names are computed
// once.
type (
	intFlag struct {
		*cli.IntFlag
		names []string
	}
	boolFlag struct {
		*cli.BoolFlag
		names []string
	}
	stringFlag struct {
		*cli.StringFlag
		names []string
	}
	stringSliceFlag struct {
		*cli.StringSliceFlag
		names []string
	}
)

// Names returns the flag's name and aliases.
func (f intFlag) Names() []string { return f.names }

// Names returns the flag's name and aliases.
func (f boolFlag) Names() []string { return f.names }

// Names returns the flag's name and aliases.
func (f stringFlag) Names() []string { return f.names }

// Names returns the flag's name and aliases.
func (f stringSliceFlag) Names() []string { return f.names }

// Unwrap returns the urfave/cli flag inside the wrapper.
func (f intFlag) Unwrap() cli.Flag { return f.IntFlag }

// Unwrap returns the urfave/cli flag inside the wrapper.
func (f boolFlag) Unwrap() cli.Flag { return f.BoolFlag }

// Unwrap returns the urfave/cli flag inside the wrapper.
func (f stringFlag) Unwrap() cli.Flag { return f.StringFlag }

// Unwrap returns the urfave/cli flag inside the wrapper.
func (f stringSliceFlag) Unwrap() cli.Flag { return f.StringSliceFlag }

// unwrapFlag returns the urfave/cli flag inside a namesOnce wrapper (its
// Unwrap, which the completion's type switches use too), or f.
func unwrapFlag(f cli.Flag) cli.Flag {
	if w, ok := f.(interface{ Unwrap() cli.Flag }); ok {
		return w.Unwrap()
	}
	return f
}

// healthUsage says what the health check sends where, why the default is
// what it is and how to change it: users who never call DeepSeek saw
// requests to api.deepseek.com and could not tell why (SPEC HC-1 keeps that
// default for the standalone proxy).
const healthUsage = "GET this URL through each candidate at start and every --health-interval-ms; the first whose origin answers (status < 500) is preferred. " +
	"The default is only a public model API that answers quickly (nothing else depends on it): give the endpoint your agent uses (e.g. https://api.openai.com), or '' to send no check"

// healthFlag is --health-url; claude-dual-proxy's default is the origin of
// the agent's own endpoint (SPEC RUN-1b, resolved in resolve).
func healthFlag(m mode) cli.Flag {
	f := &cli.StringFlag{Name: fHealthURL, Value: defaultHealthURL, EnvVars: []string{"HEALTH_URL"}, Usage: healthUsage}
	if m == modeClaude {
		f.Value = defaultClaudeBase
		f.DefaultText = "origin of $ANTHROPIC_BASE_URL, else " + defaultClaudeBase
	}
	return f
}
