package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/agentconf"
	"github.com/dual-proxy/dual-proxy/internal/app/cli/hint"
	"github.com/dual-proxy/dual-proxy/internal/app/registry"
	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
	"github.com/dual-proxy/dual-proxy/launcher"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/signals"
)

// run is `dual-proxy run` and `claude-dual-proxy` (SPEC RUN-1): the
// settings, the log, then the launcher's sequence (listener, pool,
// registry, child) through a launch, whose cleanups run in reverse order of
// that sequence.
func run(c *cli.Context, m mode, sio IO) error {
	s, err := resolve(c, m, sio.Environ)
	if err != nil {
		return err
	}
	if !c.Bool(fPrintConfig) && len(s.Command) > 0 && !childFound(s.Command[0]) {
		// Said first and alone: the warnings about the default
		// pool file or the agent's settings would bury it, and none of
		// them matters until the command exists.
		return cli.Exit(hint.NotFound(c.App.Name, m.hintKind(), s.Command[0]), signals.StatusNotFound)
	}
	if s.ConfigWarning != "" {
		fmt.Fprintf(c.App.ErrWriter, "%s: warning: %s\n", c.App.Name, s.ConfigWarning)
	}
	if c.Bool(fPrintConfig) {
		return s.Print(c.App.Writer)
	}
	logw, err := openLogFile(s.LogFile)
	if err != nil {
		return cli.Exit(fmt.Sprintf("%s: log file: %v", c.App.Name, err), 1)
	}
	defer logw.Close()
	l := &launch{prog: c.App.Name, mode: m, s: s, terminal: c.App.ErrWriter, log: launcherLogger(c.App.Name, s, logw, c.App.ErrWriter), mux: proxy.NewMux()}
	if s.HealthWhy != "" {
		// Which URL the health check uses, and why; its
		// origin only (a path or query may carry a secret).
		l.log.Info("health check target", "health", healthTarget(s.Live.String(settings.HealthURL)), "why", s.HealthWhy)
	}
	// Every launcher that serves pools requires a per-launch token, also
	// without --pool (the default config file's pools are served then, and
	// an open /pool/ would let any local user spend the channel keys while
	// any launcher runs). Without --pool the child is not
	// given it; `dual-proxy status --show-token` and pool test find it in
	// the registry.
	if s.Pool != nil {
		l.token = newToken()
	}
	defer l.cleanup()
	host, port, fallback := s.listener()
	status, err := launcher.Run(context.Background(), launcher.Config{
		ListenHost:   host,
		ListenPort:   port,
		PortFallback: fallback,
		AvoidPorts:   s.AvoidPorts(),
		Proxy:        l.proxyConfig,
		Ready:        l.ready,
		Prepare:      l.prepare,
		Command:      s.Command,
		Env:          s.Env,
		KillAfter:    s.KillAfter,
		Stdin:        sio.Stdin,
		Stdout:       sio.Stdout,
		Stderr:       sio.Stderr,
		Logger:       l.log,
		// The program exits when run returns (cmd/dual-proxy, cmd/claude-dual-proxy).
		KeepSignalHandlers: true,
	})
	return l.exit(status, err)
}

// childFound reports whether command can be found the way the launcher
// will start it (exec.Command's lookup in this process's PATH, or the
// path itself when it has a separator). Only "not found" is false: a file
// that cannot be executed is the launcher's to report (126).
func childFound(command string) bool {
	_, err := exec.LookPath(command)
	return err == nil || !errors.Is(err, exec.ErrNotFound) && !errors.Is(err, fs.ErrNotExist)
}

// launcherLogger is the launcher's logger on its log file w, with the
// start-up warnings logged: a default pool configuration with errors, an
// empty one, a channel key in a file other users can read, and a
// non-loopback listener; the terminal gets the last two too (the log is a
// file here, which nobody watches).
func launcherLogger(prog string, s *Settings, w io.Writer, terminal io.Writer) *slog.Logger {
	log := newLogger(s, w)
	if s.ConfigWarning != "" {
		log.Warn("running without pools: the default pool configuration has errors", "reason", s.ConfigWarning)
	}
	if s.Pool != nil {
		warnEmptyConfig(s.ConfigPath, s.Pool, log)
	}
	if w := warnReadableKeys(s, log); w != "" {
		fmt.Fprintf(terminal, "%s: warning: %s\n", prog, w)
	}
	if host := s.Live.String(settings.ListenHost); warnOpenProxy(host, log) {
		fmt.Fprintf(terminal, "%s: warning: listening on %s, not loopback: this is an unauthenticated open proxy reachable by others\n", prog, host)
	}
	return log
}

// launch is one launcher run: what the launcher's hooks (proxyConfig,
// ready, prepare) set up, and what cleanup undoes.
type launch struct {
	prog     string
	mode     mode
	s        *Settings
	terminal io.Writer // the launcher's stderr, before the child owns it
	log      *slog.Logger
	mux      *proxy.Mux
	token    string // the per-launch pool token ("" without pools)

	reg         *registry.Registration
	closePool   func() error
	engine      *proxy.Engine
	poolCleanup []func() // what pool-mode presets wrote (poolChild)
	stopWatch   func()   // ends the config file's watch (nil: not started)
	bypass      []string // the agent's settings that bypass the launcher (agentconf warnings)
}

// proxyConfig is the launcher's Proxy hook: the proxy configuration for
// the bound port, its start-up warnings (skipped gateways, redacted) on the
// terminal too, where the user sees them.
func (l *launch) proxyConfig(port int) (proxy.Config, []string, error) {
	pc, w, err := l.s.ProxyConfig(port, l.log)
	pc.Handler = l.mux
	for _, line := range w {
		fmt.Fprintf(l.terminal, "%s: warning: %s\n", l.prog, line)
	}
	return pc, w, err
}

// ready is the launcher's Ready hook: metrics, the live settings, the
// pool (or noPool) on /pool/, and the registry entry with the
// control token.
func (l *launch) ready(srv *proxy.Server, port int) {
	l.mux.Attach(srv)
	met := mountMetrics(l.mux, srv)
	f := newConfigFile(l.s, l.log)
	if _, err := startLive(l.s, f, srv, l.mux, met, port, l.log); err != nil {
		l.log.Warn("settings of the running instance cannot be changed", "reason", err.Error())
	}
	if l.s.Pool != nil {
		p := newPool(l.s, f, pool.Options{Transport: srv.Engine().PoolRoundTripper(), Logger: l.log, Token: l.token, Observer: met.PoolObserver()}, l.log)
		l.closePool = p.Close
		met.AttachPool(func() *pool.Pool { return p })
		l.mux.Handle("/pool/", p)
	} else {
		l.mux.Handle("/pool/", noPool)
	}
	l.engine = srv.Engine()
	l.stopWatch = f.startWatch(watchEvery)
	l.reg = register(l.s, launcherProgram(l.mode), port, l.token, l.log)
	storeControlToken(l.reg, l.s.ControlToken, l.log)
}

// prepare is the launcher's Prepare hook: pool mode's environment and
// presets (poolChild), Claude Code's --settings layer with the environment
// the launcher set (claudePin, unless --no-agent-presets), then the
// warnings of the agent's own configuration files (agentconf), before the
// child owns the terminal, and in the log.
func (l *launch) prepare(port int, env, argv []string) ([]string, []string) {
	if l.s.PoolName != "" {
		var cleanup func()
		var warnings []string
		env, argv, cleanup, warnings = poolChild(l.s, l.token, port, env, argv)
		l.poolCleanup = append(l.poolCleanup, cleanup)
		for _, w := range warnings {
			fmt.Fprintf(l.terminal, "%s: warning: %s\n", l.prog, w)
			l.log.Warn(w)
		}
	}
	known := ""
	if l.mode == modeClaude {
		known = "claude" // claude-dual-proxy runs Claude Code, whatever --command is called
	}
	checked := argv // the agent's own command line decides which files are read
	pinned := false
	// Only a command named claude: a wrapper given to claude-dual-proxy's
	// --command (or `sh -c …`) need not pass Claude Code's flags on, so its
	// files are checked and warned about instead.
	if l.s.AgentPresets && len(argv) > 0 && commandName(argv[0]) == "claude" {
		var cleanup func()
		argv, cleanup, pinned = claudePin(l.s.Env, env, argv)
		l.poolCleanup = append(l.poolCleanup, cleanup)
	}
	for _, w := range agentconf.Warnings(l.prog, checked, agentconf.Launch{Parent: l.s.Env, Child: env, PoolWithoutPresets: l.s.PoolName != "" && !l.s.AgentPresets, Agent: known, Pinned: pinned}) {
		fmt.Fprintln(l.terminal, w)
		l.log.Warn(w)
		l.bypass = append(l.bypass, w)
	}
	return env, argv
}

// cleanup undoes the launch in reverse order: the presets' files, the
// config file's watch, the registry entry, the pool.
func (l *launch) cleanup() {
	for _, f := range l.poolCleanup {
		f()
	}
	if l.stopWatch != nil {
		l.stopWatch()
	}
	l.reg.Remove()
	if l.closePool != nil {
		_ = l.closePool()
	}
}

// exit maps the launcher's status and error to run's: a command not found
// with its hint (SPEC RUN-3), a proxy that could not start (SPEC RUN-2) or a command
// that could not run as one line naming the log, the child's own status
// otherwise, with the failed-requests hint when it failed.
func (l *launch) exit(status int, err error) error {
	s := l.s
	if err != nil && status == 127 && len(s.Command) > 0 {
		return cli.Exit(hint.NotFound(l.prog, l.mode.hintKind(), s.Command[0]), status)
	}
	if err != nil && (status == 1 || status == 126 || status == 127) {
		// The proxy could not start, or the command could not be
		// found or executed: one line, like a shell.
		hint := ""
		if netutil.IsAddrInUse(err) {
			host, port, fallback := s.listener()
			hint = busyHint(s.Env, host, port, fallback)
		}
		return cli.Exit(fmt.Sprintf("%s: %s%s (see the log: %s)", l.prog, oneLine(err.Error()), hint, s.LogFile), status)
	}
	if hint := agentExitHint(s.Command, status); hint != "" {
		// The agent's own exit status names the cause: the
		// fix, not the proxy's log.
		fmt.Fprintf(l.terminal, "%s: %s\n", l.prog, hint)
	} else if status != 0 && len(l.bypass) > 0 {
		// The child's own settings sent it past the proxy: what
		// failed may never have reached the proxy, so its log is the wrong place to look.
		fmt.Fprintf(l.terminal, "%s: the command failed after the warning(s) at start: its own settings send it past dual-proxy; fix the file(s) named there first\n", l.prog)
	} else if status != 0 && l.engine != nil {
		if hint := failedRequestsHint(l.prog, l.engine.Decisions(), s.LogFile); hint != "" {
			fmt.Fprintln(l.terminal, hint)
		}
	}
	if status != 0 {
		return cli.Exit("", status)
	}
	return nil
}

// geminiUntrustedStatus is Gemini CLI's exit status outside a trusted
// folder (0.61: "Gemini CLI is not running in a trusted directory").
const geminiUntrustedStatus = 55

// agentExitHint is the launcher's last line for an agent command argv that
// exited with status, when that status alone names the cause, else "". It
// names the fix and does nothing on the user's behalf: the launcher trusts
// no folder for Gemini CLI.
func agentExitHint(argv []string, status int) string {
	if len(argv) == 0 || status != geminiUntrustedStatus || commandName(argv[0]) != "gemini" {
		return ""
	}
	return "gemini exited 55: Gemini CLI runs only in a trusted folder; pass --skip-trust, set GEMINI_CLI_TRUST_WORKSPACE=true, " +
		"or trust this folder in gemini's interactive mode (the launcher trusts nothing for you)"
}

// openLogFile opens the launcher's log file for appending, creating its
// directory (0700) and the file (0600).
func openLogFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}
