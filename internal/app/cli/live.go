package cli

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/envrewrite"
	"github.com/dual-proxy/dual-proxy/internal/app/metrics"
	"github.com/dual-proxy/dual-proxy/internal/app/registry"
	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// The proxy's settings are read here into internal/app/settings' values, one
// per long flag name, and checked there: the same checks a running
// instance's change gets, with the command line's messages
// (the first error names its flag, exit 2).

// envControlToken is --control-token's variable.
const envControlToken = "CONTROL_TOKEN"

// metaArgs is the App.Metadata key of the command line after the program
// name (runApp).
const metaArgs = "args"

// fControlToken is the flag of the control token of the settings API.
const fControlToken = "control-token"

// controlTokenFlag is --control-token (every command that runs a proxy).
// Its usage has no backquotes: urfave/cli shows a backquoted word as the
// flag's value placeholder in help and man pages.
func controlTokenFlag() cli.Flag {
	return &cli.StringFlag{Name: fControlToken, EnvVars: []string{envControlToken},
		Usage: "token a change of the running instance's settings needs (Authorization: Bearer; default: a new one per start, kept in the instance registry, where dual-proxy settings finds it)"}
}

// flagValues are the settings as the flags of c (their variables, their
// defaults) give them, where each came from, and the flag that set a key
// where it is not --KEY (verify-tls by --no-verify-tls).
func flagValues(c *cli.Context, flags []cli.Flag, environ []string) (settings.Values, map[string]settings.Source, map[string]string) {
	v := settings.Values{}
	src := map[string]settings.Source{}
	args, _ := c.App.Metadata[metaArgs].([]string)
	for _, k := range settings.Keys {
		switch k.Kind {
		case settings.KindMS, settings.KindCount:
			v[k.Name] = c.Int(k.Name)
		case settings.KindBool:
			v[k.Name] = c.Bool(k.Name)
		case settings.KindString:
			v[k.Name] = c.String(k.Name)
			if k.Optional && !c.IsSet(k.Name) {
				v[k.Name] = nil // not given: not the same as '' (settings.Key.Optional)
			}
		case settings.KindList:
			v[k.Name] = flagList(k.Name, c.StringSlice(k.Name))
		}
		switch {
		case !c.IsSet(k.Name):
			src[k.Name] = settings.SourceDefault
		case envSource(k.Name, args, flags, environ) != "":
			src[k.Name] = settings.SourceEnv
		default:
			src[k.Name] = settings.SourceFlag
		}
	}
	startFlags := map[string]string{}
	if c.Bool(fNoVerifyTLS) {
		v[settings.VerifyTLS], src[settings.VerifyTLS] = false, settings.SourceFlag
		startFlags[settings.VerifyTLS] = "--" + fNoVerifyTLS
	}
	return v, src, startFlags
}

// flagDefaults are the settings' defaults of mode m (a key reset with
// null, or removed from the file, returns to them).
func flagDefaults(m mode) settings.Values {
	v := settings.Values{}
	for _, f := range proxyFlags(m) {
		switch f := unwrapFlag(f).(type) {
		case *cli.IntFlag:
			v[f.Name] = f.Value
		case *cli.BoolFlag:
			v[f.Name] = f.Value
		case *cli.StringFlag:
			v[f.Name] = f.Value
			if k, ok := settings.Lookup(f.Name); ok && k.Optional {
				v[f.Name] = nil
			}
		case *cli.StringSliceFlag:
			v[f.Name] = []string{}
			if f.Value != nil {
				v[f.Name] = settings.SplitList(f.Value.Value())
			}
		}
	}
	return v
}

// settingsEnv is what checking s's values needs besides them.
func (s *Settings) settingsEnv(boundPort int) settings.Env {
	var envProxies []route.EnvProxy
	for _, p := range envrewrite.ParentProxies(s.Env) {
		envProxies = append(envProxies, route.EnvProxy{Var: p.Var, Value: p.Value})
	}
	return settings.Env{BoundPort: boundPort, NoProxy: noProxyRules(s.Env), EnvProxies: envProxies}
}

// resolveProxySettings reads and checks the proxy settings of c into s.
func resolveProxySettings(c *cli.Context, s *Settings) error {
	s.Live, s.Sources, s.StartFlags = flagValues(c, proxyFlags(s.Mode), s.Env)
	return s.check()
}

// check checks s.Live into s.Resolved, which every reader of a proxy
// setting reads; the first error is the command line's usage error.
func (s *Settings) check() error {
	r, fes := settings.Check(s.Live, s.settingsEnv(0))
	if fes != nil {
		return usageError(fes[0].Field, "%s", fes[0].Message)
	}
	s.Live, s.Resolved = r.Values, r
	return nil
}

// resolveFileSettings lays the config file's proxy: section over the
// settings (a flag or its variable wins for the keys it sets)
// and checks them again; an error is at FILE:LINE:COL, exit 2.
func resolveFileSettings(c *cli.Context, s *Settings) error {
	s.ConfigExplicit = c.String(fConfig) != ""
	if s.ConfigPath == "" || s.ConfigMissing {
		return nil
	}
	data, err := os.ReadFile(s.ConfigPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var sec *settings.Section
	if err == nil {
		sec, err = settings.ReadSection(data, s.ConfigPath)
	}
	if err != nil {
		return usageError(fConfig, "%s", configErrorText(err))
	}
	next, changed := settings.Overlay(s.Live, s.Sources, sec, flagDefaults(s.Mode))
	if len(changed) == 0 {
		return nil
	}
	if _, fes := settings.Check(next, s.settingsEnv(0)); fes != nil {
		return usageError(fConfig, "%s", configErrorText(sec.Errors(fes)))
	}
	for k := range changed {
		s.Sources[k] = settings.SourceFile
	}
	if _, ok := changed[settings.HealthURL]; ok {
		s.HealthWhy = "" // the file's URL, not the launcher's choice
	}
	s.Live = next
	return s.check()
}

// startLive makes the settings of the running instance changeable (SPEC
// OPS-7): GET/PUT /_dual-proxy/settings on mux, applied to srv's engine
// and the log level; the change counter on met; the config file f's
// proxy: section applied by f's reloads and, with --config, written back
// under f's lock. f.live is set to the settings.
func startLive(s *Settings, f *configFile, srv *proxy.Server, mux *proxy.Mux, met *metrics.Metrics, port int, log *slog.Logger) (*settings.Live, error) {
	e := srv.Engine()
	defaults := flagDefaults(s.Mode)
	if s.Mode == modeClaude {
		defaults[settings.HealthURL] = claudeHealthURL(s.Env) // the agent's own endpoint
	}
	live, err := settings.New(settings.Options{
		Values:     s.Live,
		Sources:    s.Sources,
		StartFlags: s.StartFlags,
		Defaults:   defaults,
		Env:        s.settingsEnv(port),
		File:       s.ConfigPath,
		WriteBack:  s.ConfigExplicit,
		Logger:     log,
		OnChange:   met.SettingsChanged,
		Lock:       &f.mu,
		Written:    f.written,
		Apply: func(r *settings.Resolved) error {
			cfg, _, err := r.ProxyConfig(port)
			if err != nil {
				return err
			}
			if err := e.Reconfigure(cfg); err != nil {
				return err
			}
			s.Level.Set(r.Level)
			return nil
		},
		Probe: func(ctx context.Context, gateway string) (string, time.Duration, error) {
			cand, err := route.ParseGateway(gateway, "gateway")
			if err != nil {
				return "", 0, err
			}
			return e.Probe(ctx, cand)
		},
	})
	if err != nil {
		return nil, err
	}
	f.live = live
	h := settings.Handler(live, s.ControlToken)
	mux.Handle(settings.Path, h)
	mux.Handle(settings.Path+"/", h)
	return live, nil
}

// controlToken is --control-token, else a new token for this start.
func controlToken(c *cli.Context) string {
	if t := strings.TrimSpace(c.String(fControlToken)); t != "" {
		return t
	}
	return newToken()
}

// storeControlToken keeps token in the registry entry reg (nil: not
// registered) for `dual-proxy settings` of the same user.
func storeControlToken(reg *registry.Registration, token string, log *slog.Logger) {
	if err := reg.SetControlToken(token); err != nil {
		log.Warn("control token not registered: dual-proxy settings needs --control-token", "reason", err.Error())
	}
}

// flagList is a list flag's values as settings: the flag package split
// every value on commas already; the gateway list is joined back and split
// by settings.SplitGateways, which keeps a comma in a password.
func flagList(name string, vals []string) []string {
	if name == settings.Gateway {
		return settings.SplitGateways(strings.Join(vals, ","))
	}
	return settings.SplitList(vals)
}
