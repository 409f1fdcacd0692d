package cli

import (
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"

	"github.com/dual-proxy/dual-proxy/envrewrite"
)

// Usage messages that help. Every message is one
// line (SPEC LIS-5) and says what to type instead.

// flagError is a bad flag value found by resolve: exit 2, one line (SPEC
// LIS-5). runApp formats it, naming the environment variable instead of the
// flag when the value came from the environment.
type flagError struct {
	flag string // without dashes
	msg  string
}

func (e *flagError) Error() string { return "--" + e.flag + ": " + e.msg }

// usageError is a bad flag or value: exit 2, one line (SPEC LIS-5).
func usageError(flag, format string, a ...any) error {
	return &flagError{flag: flag, msg: fmt.Sprintf(format, a...)}
}

// formatFlagError is the one-line message of e for program prog: "prog:
// --flag: msg" when the flag was typed (or defaulted), "prog: environment
// variable VAR (--flag): msg" when its value came from VAR.
func formatFlagError(prog string, e *flagError, args []string, flags []cli.Flag, environ []string) string {
	if v := envSource(e.flag, args, flags, environ); v != "" {
		return fmt.Sprintf("%s: environment variable %s (--%s): %s", prog, v, e.flag, e.msg)
	}
	return prog + ": " + e.Error()
}

// envSource is the environment variable that set flag name, or "" when the
// flag was given on the command line (before any "--") or not set at all.
func envSource(name string, args []string, flags []cli.Flag, environ []string) string {
	f := findFlag(flags, name)
	if f == nil || onCommandLine(args, f.Names()) {
		return ""
	}
	ev, ok := f.(interface{ GetEnvVars() []string })
	if !ok {
		return ""
	}
	for _, v := range ev.GetEnvVars() {
		if _, set := envrewrite.Get(environ, v); set {
			return v
		}
	}
	return ""
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// onCommandLine reports whether one of names was given as -name or --name
// (with or without "=value") before the first "--".
func onCommandLine(args, names []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		for _, want := range names {
			if n == want {
				return true
			}
		}
	}
	return false
}

// The patterns that read urfave/cli's and Go's flag errors, compiled on
// first use: compiling them in package init cost every launch, also every
// launch without an error.
var (
	reUndefined = lazyRegexp(`flag provided but not defined: -+(\S+)`)
	// Go's flag package, through urfave/cli: "-name" for --name too.
	reBadValue = lazyRegexp(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([\w-]+): `)
	reNoValue  = lazyRegexp(`^flag needs an argument: -+([\w-]+)$`)
	reEnvParse = lazyRegexp(`could not parse "(.*)" as (\w+) value from (?:env var|environment variable) "(\w+)" for flag ([\w-]+)`)
)

// lazyRegexp returns a function that compiles expr on its first call
// (panicking, like regexp.MustCompile, if expr is invalid) and returns the
// same *regexp.Regexp on every call.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// checkGatewayPorts refuses a bare --gateway without a port: "host" would
// silently mean host:80, which is rarely a proxy. http:// URLs keep the URL
// default (80). A value with credentials is never echoed.
func checkGatewayPorts(gws []string) error {
	for _, g := range gws {
		if strings.Contains(g, "://") {
			continue
		}
		hostport := g[strings.LastIndex(g, "@")+1:]
		if _, port, err := net.SplitHostPort(hostport); err == nil && port != "" {
			continue
		}
		if hostport != g {
			return usageError(fGateway, "a gateway has no port (want [user:pass@]host:port or an http:// URL)")
		}
		example := "host:8080"
		if !strings.ContainsAny(g, ":[]") {
			example = g + ":8080"
		}
		return usageError(fGateway, "%q has no port (want host:port, e.g. %s, or an http:// URL)", g, example)
	}
	return nil
}

// usageHint rewrites a flag-parsing error of command cmd (HelpName, e.g.
// "dual-proxy run") into one helpful line. args are the command line after
// the program name; flags the command's flags; m its mode.
func usageHint(cmd string, m mode, err error, args []string, flags []cli.Flag) string {
	msg := oneLine(err.Error())
	if sub := reEnvParse().FindStringSubmatch(msg); sub != nil {
		want := map[string]string{"int": "a whole number", "bool": "true or false", "int64": "a whole number"}[sub[2]]
		if want == "" {
			want = "a " + sub[2]
		}
		return fmt.Sprintf("%s: environment variable %s (--%s): want %s, got %q", cmd, sub[3], sub[4], want, sub[1])
	}
	if sub := reBadValue().FindStringSubmatch(msg); sub != nil {
		return fmt.Sprintf("%s: --%s: want %s, got %q", cmd, sub[2], flagWants(sub[2], flags), sub[1])
	}
	if sub := reNoValue().FindStringSubmatch(msg); sub != nil {
		return fmt.Sprintf("%s: --%s needs a value (--%s VALUE or --%s=VALUE)", cmd, sub[1], sub[1], sub[1])
	}
	sub := reUndefined().FindStringSubmatch(msg)
	if sub == nil {
		return cmd + ": " + msg
	}
	typed := typedFlag(args, sub[1])
	if s := suggest(sub[1], flagNames(flags)); s != "" {
		hint := ""
		if m == modeClaude {
			hint = " (claude's own flags go after --)"
		}
		return fmt.Sprintf("%s: unknown flag %s; did you mean %s?%s", cmd, typed, dashed(s), hint)
	}
	switch m {
	case modeClaude:
		return fmt.Sprintf("%s: %s is not a %s flag; arguments for claude go after --: %s", cmd, typed, cmd, correctedCommand(cmd, args, typed))
	case modeRun:
		return fmt.Sprintf("%s: %s is not a %s flag; the command and its flags go after --: %s [flags] -- CMD [ARGS...]", cmd, typed, cmd, cmd)
	}
	return fmt.Sprintf("%s: unknown flag %s; see %s --help", cmd, typed, cmd)
}

// flagWants says in words what flag name of flags takes, for a value that
// did not parse (SPEC LIS-5: the error names the flag and what it wants,
// not Go's "parse error").
func flagWants(name string, flags []cli.Flag) string {
	for _, f := range flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		switch unwrapFlag(f).(type) {
		case *cli.BoolFlag:
			return "true or false"
		case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
			return "a whole number"
		case *cli.Float64Flag:
			return "a number"
		case *cli.DurationFlag:
			return "a duration such as 5s"
		}
	}
	return "a valid value"
}

// typedFlag is the argument as the user typed it (flag reports "-name"
// for both -name and --name).
func typedFlag(args []string, name string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		if n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && n == name {
			return a
		}
	}
	return "-" + name
}

// correctedCommand is cmd with args, "--" inserted before the first
// occurrence of typed: the launcher's flags stay in front, the agent's
// arguments go after "--". Arguments are shell-quoted where needed.
func correctedCommand(cmd string, args []string, typed string) string {
	out := []string{cmd}
	inserted := false
	for _, a := range args {
		if !inserted && a == typed {
			out = append(out, "--")
			inserted = true
		}
		out = append(out, shellQuote(a))
	}
	return strings.Join(out, " ")
}

var shellSafe = lazyRegexp(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell when it holds anything but safe
// characters.
func shellQuote(s string) string {
	if shellSafe().MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func flagNames(flags []cli.Flag) []string {
	names := []string{"help"}
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	return names
}

func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// suggest is the known name closest to typed when it is a likely typo
// (Levenshtein distance at most 2 and at most half of typed's length), or
// "". No prefix matching: claude's --print must not become --print-config.
func suggest(typed string, known []string) string {
	best, bestD := "", 1<<30
	for _, k := range known {
		if d := smetrics.WagnerFischer(typed, k, 1, 1, 1); d < bestD {
			best, bestD = k, d
		}
	}
	if bestD <= 2 && bestD*2 <= len(typed) {
		return best
	}
	return ""
}

// unknownCommand is the message for `dual-proxy WORD [ARGS...]` where WORD
// is no command: --version for "version" (it is a flag here, as `go
// version` and `git version` taught users to type it), a suggestion when
// WORD is close to a command, else the list of commands, and the `run --`
// form only when WORD looks like a program the user meant to run behind
// the proxy (runnable: on PATH, a path, or a known agent); "nope" got
// `dual-proxy run -- nope`, a command that cannot work.
func unknownCommand(args []string, cmds []*cli.Command) string {
	word := args[0]
	if word == "version" {
		return "dual-proxy: unknown command \"version\"; the version is a flag: dual-proxy --version"
	}
	names := commandNames(cmds)
	s := suggest(word, names)
	if runnable(word) {
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = shellQuote(a)
		}
		msg := fmt.Sprintf("dual-proxy: unknown command %q; to run %s behind the proxy: dual-proxy run -- %s", word, shellQuote(word), strings.Join(quoted, " "))
		if s != "" && s != "run" {
			msg += " (or did you mean `dual-proxy " + s + "`?)"
		}
		return msg
	}
	if s != "" {
		return fmt.Sprintf("dual-proxy: unknown command %q; did you mean `dual-proxy %s`?", word, s)
	}
	return fmt.Sprintf("dual-proxy: unknown command %q (commands: %s)", word, strings.Join(names, ", "))
}

// commandNames are the visible commands of cmds, sorted.
func commandNames(cmds []*cli.Command) []string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	sort.Strings(names)
	return names
}

// runnable reports whether word names a program: one exec.LookPath finds
// (the lookup `run` does for its child), or an agent of agentInstall.
func runnable(word string) bool {
	if _, ok := agentInstall[strings.ToLower(word)]; ok {
		return true
	}
	_, err := exec.LookPath(word)
	return err == nil
}

// unknownHelpTopic is the message for `dual-proxy help WORD` (also
// `--help WORD`, `h WORD`) where WORD is no command: help shows a
// command's help, so it names the commands, or the one WORD is close to;
// never the `run --` form (it said `dual-proxy run -- nope` for `help
// nope`; SPEC LIS-5).
func unknownHelpTopic(prog, word string, cmds []*cli.Command) string {
	if word == "version" {
		return prog + ": the version is a flag, not a command: " + prog + " --version"
	}
	names := commandNames(cmds)
	if s := suggest(word, names); s != "" {
		return fmt.Sprintf("%s help: %q is no command; did you mean `%s help %s`?", prog, word, prog, s)
	}
	return fmt.Sprintf("%s help: %q is no command (help topics: %s)", prog, word, strings.Join(names, ", "))
}

// reNoHelpTopic is urfave/cli's answer (exit 3) to `dual-proxy help X`,
// `dual-proxy pool X` and `dual-proxy pool help X` for an X that is no
// command.
var reNoHelpTopic = lazyRegexp(`^No help topic for '(.*)'$`)

// unknownTopic is the message for a level args name without the command
// word: the pool subcommands after "pool", else the program's commands as
// help topics (exit 2, LIS-5): `dual-proxy WORD` itself is serve's
// unknownCommand, so urfave/cli answers "No help topic" at the top level
// only to a help request.
func unknownTopic(app *cli.App, args []string, word string) string {
	for _, a := range args {
		if a != "pool" {
			continue
		}
		for _, c := range app.Commands {
			if c.Name == "pool" {
				var names []string
				for _, sc := range c.Subcommands {
					names = append(names, sc.Name)
				}
				if s := suggest(word, names); s != "" {
					return fmt.Sprintf("%s pool: unknown command %q; did you mean `%s pool %s`?", app.Name, word, app.Name, s)
				}
				return fmt.Sprintf("%s pool: unknown command %q (commands: %s)", app.Name, word, strings.Join(names, ", "))
			}
		}
	}
	return unknownHelpTopic(app.Name, word, app.Commands)
}

// agentInstall maps agent executables to how to install them (npm package
// names as published by their vendors).
var agentInstall = map[string]string{
	"claude": "Claude Code: npm install -g @anthropic-ai/claude-code",
	"codex":  "Codex: npm install -g @openai/codex",
	"gemini": "Gemini CLI: npm install -g @google/gemini-cli",
}

// notFoundHint is the one-line message for a child command that cannot be
// found (exit 127, SPEC RUN-3): how to install a known agent, and for
// claude-dual-proxy the --command flag.
func notFoundHint(prog string, m mode, command string) string {
	msg := fmt.Sprintf("%s: %s: command not found", prog, command)
	base := command
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	base = strings.TrimSuffix(strings.ToLower(base), ".exe")
	var hints []string
	if how, ok := agentInstall[base]; ok {
		hints = append(hints, "install "+how)
	}
	if m == modeClaude {
		hints = append(hints, "or point --command (CLAUDE_COMMAND) at the executable")
	}
	if len(hints) > 0 {
		msg += " (" + strings.Join(hints, "; ") + ")"
	}
	return msg
}
