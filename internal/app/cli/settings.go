package cli

import (
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dual-proxy/dual-proxy/envrewrite"
	"github.com/dual-proxy/dual-proxy/internal/app/registry"
	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// Settings is the resolved configuration of one command: flags, their
// environment variables and defaults applied, validated. The proxy
// settings are not fields here: they are Live, by the names of
// internal/app/settings' key table, and Resolved, their checked forms (one
// description of every setting); what is here besides is no
// proxy setting (the child, the pool, the log file, the control token).
type Settings struct {
	Mode mode

	// HealthWhy says why `dual-proxy run` chose the default health URL
	// it did, for the log; "" when the user set one or another command
	// runs.
	HealthWhy string

	// Level is the loggers' level, set by a change of log-level (newLogger
	// makes it).
	Level   *slog.LevelVar
	LogFile string // launchers only

	// Model pool: the loaded config (nil: none), its path, and
	// for launchers the pool the child uses.
	Pool       *config.Config
	ConfigPath string
	// ConfigMissing: ConfigPath does not exist yet; Pool is empty and the
	// editor creates the file (serve with --pool-token).
	ConfigMissing bool
	// ConfigWarning: a launcher without --pool found the default file
	// broken and runs without pools; the text (errors, the file, what to
	// do) is printed as a warning at start, so a broken file does not stop the command.
	ConfigWarning string
	// PoolStateFlag is --pool-state (or its variable), which wins over the
	// file's state: at start and at every reload ("" when not given).
	PoolStateFlag string
	PoolName      string
	PoolAPI       string
	AgentPresets  bool
	PoolToken     string // serve: required on /pool/ endpoints when set
	// registration is this instance's registry entry once registered
	// (register), whose pool list a reload keeps current (applyPool); nil before, or when registering failed.
	registration atomic.Pointer[registry.Registration]

	// Live are the proxy settings by key (internal/app/settings), Sources where
	// each came from, Resolved their checked form: every
	// proxy setting is read here, by its key name.
	Live    settings.Values
	Sources map[string]settings.Source
	// StartFlags name the flag that set a key at start where it is not
	// --KEY (verify-tls by --no-verify-tls; settings.Options.StartFlags).
	StartFlags map[string]string
	Resolved   *settings.Resolved
	// ConfigExplicit: --config named ConfigPath (a change is written back
	// to its proxy: section).
	ConfigExplicit bool
	// ControlToken is the token a settings change needs (--control-token
	// or one per start).
	ControlToken string

	KillAfter time.Duration
	Command   []string // launchers: the child's argv
	Env       []string // the parent environment the child starts from
}

// AvoidPorts are the ports of gateways on loopback or on the listen host:
// the listener never falls back onto them (proxy.Listen). A launcher also
// avoids the standalone proxy's default port, so a `dual-proxy` started
// later (or its systemd unit) can still bind it.
func (s *Settings) AvoidPorts() []int {
	spec := s.Resolved.Spec
	spec.ListenPort = 0 // no self-loop exclusion: we want every gateway
	cands, _, _ := route.BuildCandidates(spec)
	var out []int
	if s.Mode != modeServe {
		out = append(out, standalonePort)
	}
	for _, c := range cands {
		if c.Direct {
			continue
		}
		host, port, err := net.SplitHostPort(c.Addr)
		if err != nil {
			continue
		}
		ip, ipErr := netip.ParseAddr(host)
		if host == "localhost" || host == strings.Trim(s.Live.String(settings.ListenHost), "[]") || (ipErr == nil && ip.IsLoopback()) {
			if n, err := strconv.Atoi(port); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// listener is the listener's settings: host, port and the
// ports to fall back on.
func (s *Settings) listener() (host string, port, fallback int) {
	v := s.Live
	return v.String(settings.ListenHost), v.Int(settings.ListenPort), v.Int(settings.PortFallback)
}

// ProxyConfig is the proxy.Config these settings describe, with the
// candidates built for the given bound port (a gateway there would loop back into the proxy):
// settings.Resolved.ProxyConfig, logging to log.
func (s *Settings) ProxyConfig(boundPort int, log *slog.Logger) (proxy.Config, []string, error) {
	cfg, warnings, err := s.Resolved.ProxyConfig(boundPort)
	cfg.Logger = log
	return cfg, warnings, err
}

// noProxyRules is the NO_PROXY value the proxy's own prefer-direct rules
// use: the union of no_proxy and NO_PROXY, as the child gets
// it. curl's one-wins rule (envrewrite.NoProxy) would apply only
// one of two different values.
func noProxyRules(env []string) string { return strings.Join(envrewrite.NoProxyEntries(env), ",") }
