package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/complete"
	"github.com/dual-proxy/dual-proxy/internal/app/cli/hint"
	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/internal/app/version"
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
// of its man page and shell completion). Each command but the smallest is
// built by its own function in its own file (statusCommand in status.go,
// poolCommand in pool.go, …): a new command is one more such function,
// listed in Commands; argLimits bounds its positional arguments, and the
// man pages are rerendered from this tree (TestManPages -update).
func dualProxyApp(sio IO) *cli.App {
	app := &cli.App{
		Name:                   "dual-proxy",
		Version:                version.String(),
		Usage:                  "local forwarding proxy that picks a working path per host among gateways and direct",
		UsageText:              "dual-proxy [flags]                   run the proxy\ndual-proxy run [flags] -- CMD ARGS   run a command behind it\ndual-proxy status                    show running proxies and launchers\ndual-proxy settings get|set          change the path of a running instance\ndual-proxy pool test POOL MODEL      one real call through a model pool\ndual-proxy demo                      offline demonstration",
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
			settingsCommand(sio),
			poolCommand(sio),
			completionCommand(sio),
			manCommand(sio),
		},
	}
	limitArgs(app.Name, app.Commands)
	return app
}

// Claude runs the claude-dual-proxy command line: `claude-dual-proxy
// [flags] -- [ARGS...]` runs claude behind the proxy.
func Claude(args []string, sio IO) int {
	return runApp(claudeApp(sio), append([]string{"claude-dual-proxy"}, args...), sio)
}

// claudeApp is the claude-dual-proxy command line definition. It has no
// subcommands: every argument that is not one of its flags belongs to
// claude, so `claude-dual-proxy help` runs `claude help`.
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
	setUsageErrors(app, args)
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
	if app.Metadata == nil {
		app.Metadata = map[string]any{}
	}
	app.Metadata[metaArgs] = args[1:] // flagValues tells a flag from its variable
	err := app.Run(args)
	if msg := versionError(app); msg != "" {
		fmt.Fprintln(stderr, msg)
		return 2
	}
	if err == nil {
		return 0
	}
	return exitStatus(app, err, args, sio, stderr)
}

// setUsageErrors makes a usage error of app and of each of its commands,
// nested ones included, one hint line with exit status 2,
// naming the command and its flags, instead of urfave/cli's whole help.
func setUsageErrors(app *cli.App, args []string) {
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
		return cli.Exit(hint.Usage(name, m.hintKind(), err, args[1:], flags), 2)
	}
	var setUsage func(cmds []*cli.Command)
	setUsage = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			cmd.OnUsageError = app.OnUsageError
			setUsage(cmd.Subcommands) // pool test's bad flag printed urfave/cli's whole help
		}
	}
	setUsage(app.Commands)
}

// exitStatus prints the error app.Run returned to stderr as one line and
// returns the exit status: 2 for a bad flag (with the flag
// hint), an unknown help topic and urfave/cli's own flag errors; a
// cli.Exit code as given; else 1, the message prefixed by the app's name.
func exitStatus(app *cli.App, err error, args []string, sio IO, stderr io.Writer) int {
	var fe *flagError
	if errors.As(err, &fe) {
		fmt.Fprintln(stderr, formatFlagError(app.Name, fe, args[1:], allFlags(app), sio.Environ))
		return 2
	}
	var ec cli.ExitCoder
	if word, ok := hint.NoHelpTopic(err.Error()); ok && errors.As(err, &ec) {
		fmt.Fprintln(stderr, hint.UnknownTopic(app, args[1:], word))
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
// status's help as if "json" meant something. A command with subcommands takes one more word.
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
// pool test` showed the pool's help, not pool test's.
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
	if s.Level == nil {
		s.Level = new(slog.LevelVar)
	}
	s.Level.Set(s.Resolved.Level)
	opts := &slog.HandlerOptions{Level: s.Level} // a settings change sets it
	if s.Live.String(settings.LogFormat) == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// healthTarget is what the "listening" line says the health check
// contacts: the URL's origin (no path or query in logs: they may carry secrets), or
// "off".
func healthTarget(raw string) string {
	u, err := url.Parse(raw)
	if raw == "" || err != nil || u.Host == "" {
		return "off"
	}
	return u.Scheme + "://" + u.Host
}

// warnOpenProxy logs the warning (SPEC LIS-2) for a non-loopback listener and
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
