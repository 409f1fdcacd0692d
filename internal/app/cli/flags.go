// Package cli builds the command lines of dual-proxy and
// claude-dual-proxy: flags (each also read from its environment variable,
// so a service file or a shell profile can set it), parsed and validated
// in one place into a Settings value (invalid values exit 2 with one line
// naming the flag), and
// the command tree that runs them (app.go). Its subpackages do one job
// each and know nothing of this package: complete (shell completion),
// statusview (what status and pool test print), hint (usage messages that
// say what to type instead), agentconf (the agents' own
// configuration files that undo the launcher), manpage (the man pages).
package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/hint"
	"github.com/dual-proxy/dual-proxy/internal/app/settings"
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

// mode selects per-command defaults (SPEC LIS-1): 7898 and no fallback for
// the standalone proxy, 7896 and 10 fallback ports for the launchers.
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

// standalonePort is the standalone proxy's default port;
// launchers never fall back onto it.
const standalonePort = 7898

// proxyFlags are the flags of every command that runs a proxy.
func proxyFlags(m mode) []cli.Flag {
	fs := settingFlags(m)
	fs = append(fs,
		&cli.BoolFlag{Name: fNoVerifyTLS, Usage: "same as --verify-tls=false"},
		controlTokenFlag(),
		&cli.BoolFlag{Name: fPrintConfig, Aliases: []string{"dry-run"}, Usage: "print the resolved configuration (credentials redacted) and exit"},
	)
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

// Apply reads the flag's environment variable with settings.ParseBool,
// the one boolean parser of every source (VERIFY_TLS=no means
// what verify-tls: no means in the file and through the API), then lets
// urfave/cli register the flag with that value. An empty or blank
// variable is not set, as for a number (docs/flags.md): the default, the
// config file's value or the flag's applies, where urfave/cli would read
// false (LOOPBACK_DIRECT= exported empty by a script sent loopback
// traffic through a gateway). The error names the variable, not its
// value.
func (f boolFlag) Apply(set *flag.FlagSet) error {
	inner := *f.BoolFlag
	inner.EnvVars, inner.FilePath = nil, ""
	for _, name := range f.EnvVars {
		val, ok := os.LookupEnv(name)
		if !ok || strings.TrimSpace(val) == "" {
			continue
		}
		b, err := settings.ParseBool(val)
		if err != nil {
			return fmt.Errorf("%s (for --%s): %v (also 1/0, yes/no, on/off)", name, f.Name, err)
		}
		inner.Value = b
		f.HasBeenSet = true
		break
	}
	return inner.Apply(set)
}

// Apply reads the flag's environment variable as every source reads a
// whole number (settings.ParseText, as the config file, `dual-proxy
// settings set` and the API do): decimal, spaces around ignored; an
// empty or blank variable is not set, as urfave/cli reads it. It then
// lets urfave/cli register the flag with that value, and gives every name
// of it a decimalInt, so a value typed on the command line reads the same
// way. The error is urfave/cli's, which the usage hint turns into "want a
// whole number".
func (f intFlag) Apply(set *flag.FlagSet) error {
	inner := *f.IntFlag
	inner.EnvVars, inner.FilePath = nil, ""
	for _, name := range f.EnvVars {
		val, ok := os.LookupEnv(name)
		if !ok || strings.TrimSpace(val) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil {
			return fmt.Errorf("could not parse %q as int value from environment variable %q for flag %s: %v", val, name, f.Name, err)
		}
		inner.Value = n
		f.HasBeenSet = true
		break
	}
	if err := inner.Apply(set); err != nil {
		return err
	}
	v := decimalInt{n: new(int)}
	*v.n = inner.Value
	for _, name := range f.names {
		if fl := set.Lookup(name); fl != nil {
			fl.Value = v
		}
	}
	return nil
}

// decimalInt is a whole-number flag's value on the command line, read as
// every other source reads one (settings.ParseText): decimal, spaces
// around ignored. The flag package's own int reads "0100" as octal 64
// and takes "0x10" and "1_000", which the file and the API refuse.
type decimalInt struct{ n *int }

// Set reads s.
func (d decimalInt) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return errors.New("parse error")
	}
	*d.n = n
	return nil
}

// String is the value in decimal (urfave/cli's Context.Int reads it back).
func (d decimalInt) String() string {
	if d.n == nil {
		return "0"
	}
	return strconv.Itoa(*d.n)
}

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

// settingFlags are the flags of the proxy settings, one per key of
// internal/app/settings' table in its order: name, kind, default (the
// launchers' where it differs), environment variable and usage all come
// from the key (one description of every setting). --health-url
// says what the check sends where and why the default is what it is
// (users who never call DeepSeek saw requests to api.deepseek.com and
// could not tell why; the standalone proxy keeps that default); the launchers' default is the origin of the agent's own
// endpoint (resolved in resolve: runHealthURL).
func settingFlags(m mode) []cli.Flag {
	fs := make([]cli.Flag, 0, len(settings.Keys))
	for _, k := range settings.Keys {
		def, env, usage := k.DefaultFor(m != modeServe), []string{k.Env}, k.Usage()
		switch k.Kind {
		case settings.KindMS, settings.KindCount:
			fs = append(fs, &cli.IntFlag{Name: k.Name, Value: def.(int), EnvVars: env, Usage: usage})
		case settings.KindBool:
			fs = append(fs, &cli.BoolFlag{Name: k.Name, Value: def.(bool), EnvVars: env, Usage: usage})
		case settings.KindString:
			f := &cli.StringFlag{Name: k.Name, EnvVars: env, Usage: usage}
			f.Value, _ = def.(string) // an Optional key: "" and not set (flagValues)
			if k.Name == settings.HealthURL && m == modeClaude {
				f.Value = defaultClaudeBase
				f.DefaultText = "origin of $ANTHROPIC_BASE_URL, else " + defaultClaudeBase
			}
			if k.Name == settings.HealthURL && m == modeRun {
				f.DefaultText = "for claude, codex, gemini and qwen the origin of their base URL variable, else their vendor's API; else " + defaultHealthURL
			}
			fs = append(fs, f)
		case settings.KindList:
			f := &cli.StringSliceFlag{Name: k.Name, EnvVars: env, Usage: usage}
			if l, _ := def.([]string); len(l) > 0 {
				f.Value = cli.NewStringSlice(l...)
			}
			fs = append(fs, f)
		}
	}
	return fs
}
