package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/cli/agentconf"
	"github.com/dual-proxy/dual-proxy/internal/cli/complete"
	"github.com/dual-proxy/dual-proxy/internal/netutil"
	"github.com/dual-proxy/dual-proxy/internal/registry"
	"github.com/dual-proxy/dual-proxy/internal/version"
	"github.com/dual-proxy/dual-proxy/launcher"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/proxy"
)

// IO is the process's standard streams and environment, passed in so the
// commands never read globals (and tests can run them in-process).
type IO struct {
	Stdin          *os.File
	Stdout, Stderr *os.File
	Environ        []string
}

// DualProxy runs the dual-proxy command line (args without argv[0]) and
// returns the process exit status.
func DualProxy(args []string, sio IO) int {
	return runApp(dualProxyApp(sio), append([]string{"dual-proxy"}, args...), sio)
}

// dualProxyApp is the dual-proxy command line definition (also the source
// of its man page and shell completion).
func dualProxyApp(sio IO) *cli.App {
	app := &cli.App{
		Name:                   "dual-proxy",
		Version:                version.String(),
		Usage:                  "local forwarding proxy that picks a working path per host among gateways and direct",
		UsageText:              "dual-proxy [flags]                   run the proxy\ndual-proxy run [flags] -- CMD ARGS   run a command behind it\ndual-proxy status                    show running proxies and launchers\ndual-proxy pool test POOL MODEL      one real call through a model pool\ndual-proxy demo                      offline demonstration",
		Description:            dualProxyDescription(),
		Flags:                  proxyFlags(modeServe),
		Action:                 func(c *cli.Context) error { return serve(c, sio) },
		Writer:                 sio.Stdout,
		ErrWriter:              sio.Stderr,
		UseShortOptionHandling: false,
		Commands: []*cli.Command{
			{
				Name:      "run",
				Usage:     "run a command behind an in-process proxy",
				UsageText: "dual-proxy run [flags] -- CMD [ARGS...]",
				Flags:     withLogPath(proxyFlags(modeRun), sio.Environ),
				Action:    func(c *cli.Context) error { return run(c, modeRun, sio) },
			},
			{
				Name:   "demo",
				Usage:  "offline demonstration: a real child fetches through a dead and a working loopback gateway",
				Flags:  []cli.Flag{&cli.BoolFlag{Name: "no-curl", Usage: "use the built-in client even when curl is installed"}},
				Action: func(c *cli.Context) error { return runDemo(c, sio) },
			},
			{
				Name:      "fetch",
				Usage:     "minimal HTTP client honouring HTTP(S)_PROXY even for loopback (used by the demo without curl)",
				UsageText: "dual-proxy fetch [--insecure] URL",
				Hidden:    true,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "insecure", Usage: "skip certificate verification"},
					&cli.StringFlag{Name: "cacert", Usage: "PEM file of trusted certificates"},
				},
				Action: func(c *cli.Context) error { return fetch(c, sio) },
			},
			statusCommand(sio),
			poolCommand(sio),
			completionCommand(sio),
			manCommand(sio),
		},
	}
	limitArgs(app.Name, app.Commands)
	return app
}

// Claude runs the claude-dual-proxy command line: `claude-dual-proxy
// [flags] -- [ARGS...]` runs claude behind the proxy (SPEC RUN-1).
func Claude(args []string, sio IO) int {
	return runApp(claudeApp(sio), append([]string{"claude-dual-proxy"}, args...), sio)
}

// claudeApp is the claude-dual-proxy command line definition. It has no
// subcommands: every argument that is not one of its flags belongs to
// claude (RUN-1), so `claude-dual-proxy help` runs `claude help`.
func claudeApp(sio IO) *cli.App {
	return &cli.App{
		Name:            "claude-dual-proxy",
		Version:         version.String(),
		Usage:           "run Claude Code behind dual-proxy",
		UsageText:       "claude-dual-proxy [flags] -- [claude args...]",
		Description:     claudeDescription(),
		Flags:           withLogPath(proxyFlags(modeClaude), sio.Environ),
		Action:          func(c *cli.Context) error { return run(c, modeClaude, sio) },
		Writer:          sio.Stdout,
		ErrWriter:       sio.Stderr,
		HideHelpCommand: true,
	}
}

// runApp runs app and maps errors to exit statuses: usage errors 2 with
// one line (SPEC LIS-5), cli.Exit codes as given. What the commands and
// runApp print goes through termSafe (escapes control bytes).
func runApp(app *cli.App, args []string, sio IO) int {
	app.Writer, app.ErrWriter = termSafe(app.Writer), termSafe(app.ErrWriter)
	stderr := app.ErrWriter
	if stderr == nil {
		stderr = termSafe(sio.Stderr)
	}
	app.OnUsageError = func(c *cli.Context, err error, _ bool) error {
		name, m := app.Name, modeServe
		if app.Name == "claude-dual-proxy" {
			m = modeClaude
		} else if c.Command != nil && c.Command.Name != "" && c.Command.Name != app.Name {
			name = app.Name + " " + commandPath(app, c.Command)
			if c.Command.Name == "run" {
				m = modeRun
			}
		}
		flags := app.Flags
		if c.Command != nil && len(c.Command.Flags) > 0 {
			flags = c.Command.Flags
		}
		return cli.Exit(usageHint(name, m, err, args[1:], flags), 2)
	}
	var setUsage func(cmds []*cli.Command)
	setUsage = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			cmd.OnUsageError = app.OnUsageError
			setUsage(cmd.Subcommands) // pool test's bad flag printed urfave/cli's whole help
		}
	}
	setUsage(app.Commands)
	app.ExitErrHandler = func(*cli.Context, error) {} // we map errors below
	if msg := dashDashValue(app, args); msg != "" {
		fmt.Fprintln(stderr, msg)
		return 2
	}
	if msg := helpExtra(app, args); msg != "" {
		fmt.Fprintln(stderr, msg)
		return 2
	}
	args = helpForSubcommand(app, args)
	if len(args) > 1 && args[len(args)-1] == complete.RequestFlag {
		completion.Answer(termSafe(sio.Stdout), app, args[1:len(args)-1], sio.Environ)
		return 0
	}
	err := app.Run(args)
	if msg := versionError(app); msg != "" {
		fmt.Fprintln(stderr, msg)
		return 2
	}
	if err == nil {
		return 0
	}
	var fe *flagError
	if errors.As(err, &fe) {
		fmt.Fprintln(stderr, formatFlagError(app.Name, fe, args[1:], allFlags(app), sio.Environ))
		return 2
	}
	var ec cli.ExitCoder
	if sub := reNoHelpTopic().FindStringSubmatch(err.Error()); sub != nil && errors.As(err, &ec) {
		fmt.Fprintln(stderr, unknownTopic(app, args[1:], sub[1]))
		return 2
	}
	if errors.As(err, &ec) {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(stderr, msg)
		}
		return ec.ExitCode()
	}
	msg := oneLine(err.Error())
	if !strings.HasPrefix(msg, app.Name) {
		msg = app.Name + ": " + msg
	}
	fmt.Fprintln(stderr, msg)
	if strings.Contains(err.Error(), "flag provided but not defined") || strings.Contains(err.Error(), "invalid value") {
		return 2
	}
	return 1
}

// helpExtra is the one-line error for `PROG help CMD [SUB] WORD…`, a word
// past the command the help is for ("" when there is none, or when the
// first word names no command: unknownTopic answers that). urfave/cli's
// help reads its first word only, so `dual-proxy help status json` printed
// status's help as if "json" meant something (SPEC LIS-5). A command with subcommands takes one more word.
func helpExtra(app *cli.App, args []string) string {
	if len(args) < 3 || !isHelpWord(args[1]) || app.HideHelpCommand {
		return ""
	}
	words := args[2:]
	if isHelpWord(words[0]) && len(words) > 1 {
		return fmt.Sprintf("%s help: unexpected argument %q: help takes a command (%s help COMMAND)", app.Name, words[1], app.Name)
	}
	for _, c := range app.Commands {
		if !c.HasName(words[0]) {
			continue
		}
		limit := 1
		if len(c.Subcommands) > 0 {
			limit = 2
		}
		if len(words) <= limit {
			return ""
		}
		return fmt.Sprintf("%s help: unexpected argument %q: help takes a command (%s help %s)",
			app.Name, words[limit], app.Name, strings.Join(words[:limit], " "))
	}
	return ""
}

// helpForSubcommand turns `PROG help CMD SUB` into `PROG CMD SUB --help`
// when SUB is a subcommand of CMD, and into `PROG CMD SUB` (an unknown
// command, with did-you-mean) when CMD has subcommands but not SUB:
// urfave/cli's help command reads only its first word, so `dual-proxy help
// pool test` showed the pool's help, not pool test's (SPEC LIS-5).
//
// `PROG help help` is `PROG help` (and `PROG CMD help help` `PROG CMD
// help`): urfave/cli answered it with a bare page
// of its own ("help - Shows a list of commands…", no program name) unlike
// every other help page.
func helpForSubcommand(app *cli.App, args []string) []string {
	if len(args) == 3 && isHelpWord(args[1]) && isHelpWord(args[2]) && !app.HideHelpCommand {
		return args[:2]
	}
	if len(args) == 4 && isHelpWord(args[2]) && isHelpWord(args[3]) && !app.HideHelpCommand {
		if c := app.Command(args[1]); c != nil && len(c.Subcommands) > 0 {
			return args[:3] // `PROG pool help help` is `PROG pool help`
		}
	}
	if len(args) != 4 || !isHelpWord(args[1]) || app.HideHelpCommand {
		return args
	}
	for _, c := range app.Commands {
		if c.Name != args[2] || len(c.Subcommands) == 0 {
			continue
		}
		if slices.ContainsFunc(c.Subcommands, func(sc *cli.Command) bool { return sc.Name == args[3] }) {
			return []string{args[0], args[2], args[3], "--help"}
		}
		return []string{args[0], args[2], args[3]} // no such subcommand: say so (unknownTopic)
	}
	return args
}

// isHelpWord: urfave/cli's help command, by its name or its alias.
func isHelpWord(s string) bool { return s == "help" || s == "h" }

// commandPath is cmd's words below app ("pool test"), its name when it is
// not found.
func commandPath(app *cli.App, cmd *cli.Command) string {
	for _, c := range app.Commands {
		if c == cmd {
			return c.Name
		}
		for _, sc := range c.Subcommands {
			if sc == cmd {
				return c.Name + " " + sc.Name
			}
		}
	}
	return cmd.Name
}

// allFlags are the flags of app and of its commands.
func allFlags(app *cli.App) []cli.Flag {
	fs := append([]cli.Flag(nil), app.Flags...)
	for _, c := range app.Commands {
		fs = append(fs, c.Flags...)
	}
	return fs
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// newLogger builds the slog logger of the settings writing to w.
func newLogger(s *Settings, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: s.LogLevel}
	if s.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// serve runs the standalone proxy until SIGINT/SIGTERM (SPEC LIS-3).
func serve(c *cli.Context, sio IO) error {
	if c.Args().Len() > 0 {
		return cli.Exit(unknownCommand(c.Args().Slice(), c.App.Commands), 2)
	}
	s, err := resolve(c, modeServe, sio.Environ)
	if err != nil {
		return err
	}
	if c.Bool(fPrintConfig) {
		return s.Print(c.App.Writer)
	}
	log := newLogger(s, sio.Stderr)
	warnOpenProxy(s.ListenHost, log)
	ln, port, err := proxy.Listen(s.ListenHost, s.ListenPort, s.PortFallback, s.AvoidPorts()...)
	if err != nil {
		hint := ""
		if netutil.IsAddrInUse(err) {
			hint = busyHint(s.Env, s.ListenHost, s.ListenPort, s.PortFallback)
		}
		return cli.Exit("dual-proxy: "+err.Error()+hint, 1)
	}
	pcfg, warnings, err := s.ProxyConfig(port, log)
	if err != nil {
		ln.Close()
		return cli.Exit("dual-proxy: "+err.Error(), 2)
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	mux := proxy.NewMux()
	pcfg.Handler = mux
	srv, err := proxy.New(pcfg)
	if err != nil {
		ln.Close()
		return cli.Exit("dual-proxy: "+err.Error(), 1)
	}
	mux.Attach(srv)
	met := mountMetrics(mux, srv)
	var p *pool.Pool
	if s.Pool != nil {
		p = newPool(s, pool.Options{Transport: srv.Engine().PoolRoundTripper(), Logger: log, Token: s.PoolToken, Observer: met.PoolObserver()}, log)
		defer p.Close()
		met.AttachPool(func() *pool.Pool { return p })
		mux.Handle("/pool/", p)
		empty := true
		if s.ConfigMissing {
			log.Info("no pool configuration yet: create it on the pool page's editor (/pool/#token=…)", "config", s.ConfigPath)
		} else if empty = warnEmptyConfig(s.ConfigPath, s.Pool, log); !empty {
			log.Info("model pool loaded", "config", s.ConfigPath)
		}
		switch {
		case s.PoolToken != "":
		case empty:
			// Nothing to spend yet, but a reload (SIGHUP) may add pools
			// (the warning must not read as if pools were open now).
			log.Warn("pool endpoints have no token: pools a reload adds to the config will be callable by any local user with their channel keys; set --pool-token or "+envPoolToken, "config", s.ConfigPath)
		default:
			log.Warn("pool endpoints have no token: any local user can call the pools with their channel keys; set --pool-token or " + envPoolToken)
		}
	} else {
		mux.Handle("/pool/", noPool)
	}
	// Signal handling is in place before "listening" is logged, so a
	// supervisor that signals as soon as it sees the line is handled.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reg := register(s, "dual-proxy", ln.Addr().(*net.TCPAddr).Port, s.PoolToken, log)
	defer reg.Remove()
	log.Info("listening", "addr", ln.Addr().String(), "candidates", len(pcfg.Candidates), "health", healthTarget(s.HealthURL))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-hup:
			reloadPool(s, p, log)
		case err := <-done:
			return cli.Exit("dual-proxy: serve: "+err.Error(), 1)
		}
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), launcher.ShutdownGrace)
	defer cancel()
	srv.Shutdown(sctx)
	<-done
	return nil
}

// healthTarget is what the "listening" line says the health check
// contacts: the URL's origin (no path or query in logs, SPEC HTTP-6), or
// "off".
func healthTarget(raw string) string {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || u.Host == "" {
		return "off"
	}
	return u.Scheme + "://" + u.Host
}

// warnOpenProxy logs SPEC LIS-2's warning for a non-loopback listener and
// reports whether it did.
func warnOpenProxy(host string, log *slog.Logger) bool {
	if host == "localhost" {
		return false
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil && a.IsLoopback() {
		return false
	}
	log.Warn("listening on a non-loopback address: this is an unauthenticated open proxy reachable by others", "listen_host", host)
	return true
}

// run is `dual-proxy run` and `claude-dual-proxy` (SPEC RUN-1..RUN-3).
//
// One piece: the launcher's setup sequence (log, listener, pool, registry,
// child) whose deferred cleanups must run in reverse order of that
// sequence.
func run(c *cli.Context, m mode, sio IO) error {
	s, err := resolve(c, m, sio.Environ)
	if err != nil {
		return err
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
	log := newLogger(s, logw)
	if s.ConfigWarning != "" {
		log.Warn("running without pools: the default pool configuration has errors", "reason", s.ConfigWarning)
	}
	if s.Pool != nil {
		warnEmptyConfig(s.ConfigPath, s.Pool, log)
	}
	if warnOpenProxy(s.ListenHost, log) {
		// The log is a file here: say it on the terminal too (SPEC LIS-2).
		fmt.Fprintf(c.App.ErrWriter, "%s: warning: listening on %s, not loopback: this is an unauthenticated open proxy reachable by others\n", c.App.Name, s.ListenHost)
	}
	mux := proxy.NewMux()
	// Every launcher that serves pools requires a per-launch token, also
	// without --pool (the default config file's pools are served then, and
	// an open /pool/ would let any local user spend the channel keys while
	// any launcher runs: SPEC POOL-20). Without --pool the child is not
	// given it; `dual-proxy status --show-token` and pool test find it in
	// the registry.
	token := ""
	if s.Pool != nil {
		token = newToken()
	}
	var reg *registry.Registration
	closePool := func() error { return nil }
	defer func() { _ = closePool() }()
	defer func() { reg.Remove() }()
	var engine *proxy.Engine
	var poolCleanup []func() // what pool-mode presets wrote (poolChild)
	defer func() {
		for _, f := range poolCleanup {
			f()
		}
	}()
	status, err := launcher.Run(context.Background(), launcher.Config{
		ListenHost:   s.ListenHost,
		ListenPort:   s.ListenPort,
		PortFallback: s.PortFallback,
		AvoidPorts:   s.AvoidPorts(),
		Proxy: func(port int) (proxy.Config, []string, error) {
			pc, w, err := s.ProxyConfig(port, log)
			pc.Handler = mux
			// The log is a file here: startup warnings (skipped gateways,
			// redacted) go to the terminal too (SPEC GW-3, as LIS-2).
			for _, line := range w {
				fmt.Fprintf(c.App.ErrWriter, "%s: warning: %s\n", c.App.Name, line)
			}
			return pc, w, err
		},
		Ready: func(srv *proxy.Server, port int) {
			mux.Attach(srv)
			met := mountMetrics(mux, srv)
			if s.Pool != nil {
				p := newPool(s, pool.Options{Transport: srv.Engine().PoolRoundTripper(), Logger: log, Token: token, Observer: met.PoolObserver()}, log)
				closePool = p.Close
				met.AttachPool(func() *pool.Pool { return p })
				mux.Handle("/pool/", p)
			} else {
				mux.Handle("/pool/", noPool)
			}
			engine = srv.Engine()
			reg = register(s, launcherProgram(m), port, token, log)
		},
		Prepare: func(port int, env, argv []string) ([]string, []string) {
			if s.PoolName != "" {
				var cleanup func()
				env, argv, cleanup = poolChild(s, token, port, env, argv)
				poolCleanup = append(poolCleanup, cleanup)
			}
			// Before the child owns the terminal, and in the log.
			for _, w := range agentconf.Warnings(c.App.Name, argv, agentconf.Launch{Parent: s.Env, Child: env, PoolWithoutPresets: s.PoolName != "" && !s.AgentPresets}) {
				fmt.Fprintln(c.App.ErrWriter, w)
				log.Warn(w)
			}
			return env, argv
		},
		Command:   s.Command,
		Env:       s.Env,
		KillAfter: s.KillAfter,
		Stdin:     sio.Stdin,
		Stdout:    sio.Stdout,
		Stderr:    sio.Stderr,
		Logger:    log,
		// The program exits when run returns (cmd/dual-proxy, cmd/claude-dual-proxy).
		KeepSignalHandlers: true,
	})
	if err != nil && status == 127 && len(s.Command) > 0 {
		return cli.Exit(notFoundHint(c.App.Name, m, s.Command[0]), status)
	}
	if err != nil && (status == 1 || status == 126 || status == 127) {
		// The proxy could not start (RUN-2), or the command could not be
		// found or executed (RUN-3): one line, like a shell.
		hint := ""
		if netutil.IsAddrInUse(err) {
			hint = busyHint(s.Env, s.ListenHost, s.ListenPort, s.PortFallback)
		}
		return cli.Exit(fmt.Sprintf("%s: %s%s (see the log: %s)", c.App.Name, oneLine(err.Error()), hint, s.LogFile), status)
	}
	if status != 0 && engine != nil {
		if hint := failedRequestsHint(c.App.Name, engine.Decisions(), s.LogFile); hint != "" {
			fmt.Fprintln(c.App.ErrWriter, hint)
		}
	}
	if status != 0 {
		return cli.Exit("", status)
	}
	return nil
}

// openLogFile opens the launcher's log file for appending, creating its
// directory (0700) and the file (0600).
func openLogFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}
