// Package hint writes the one-line usage messages of dual-proxy and
// claude-dual-proxy that say what to type instead: a flag
// misspelt or given to the wrong side of "--", a command that is no
// command, a help topic that is none, a child that cannot be found.
package hint

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"
)

// Kind is what a command runs, which decides where its hints send the
// words it does not take.
type Kind int

// The kinds: the standalone proxy (and every other command), `dual-proxy
// run` (a command after "--") and claude-dual-proxy (claude's arguments
// after "--").
const (
	Serve Kind = iota
	Run
	Claude
)

// oneLine is s up to its first newline.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
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

// Usage rewrites a flag-parsing error of command cmd (HelpName, e.g.
// "dual-proxy run") into one helpful line. args are the command line after
// the program name; flags the command's flags; k what the command runs.
func Usage(cmd string, k Kind, err error, args []string, flags []cli.Flag) string {
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
	if s := Suggest(sub[1], flagNames(flags)); s != "" {
		hint := ""
		if k == Claude {
			hint = " (claude's own flags go after --)"
		}
		return fmt.Sprintf("%s: unknown flag %s; did you mean %s?%s", cmd, typed, dashed(s), hint)
	}
	switch k {
	case Claude:
		return fmt.Sprintf("%s: %s is not a %s flag; arguments for claude go after --: %s", cmd, typed, cmd, correctedCommand(cmd, args, typed))
	case Run:
		return fmt.Sprintf("%s: %s is not a %s flag; the command and its flags go after --: %s [flags] -- CMD [ARGS...]", cmd, typed, cmd, cmd)
	}
	return fmt.Sprintf("%s: unknown flag %s; see %s --help", cmd, typed, cmd)
}

// flagWants says in words what flag name of flags takes, for a value that
// did not parse (the error names the flag and what it wants,
// not Go's "parse error").
func flagWants(name string, flags []cli.Flag) string {
	for _, f := range flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		if w, ok := f.(interface{ Unwrap() cli.Flag }); ok {
			f = w.Unwrap()
		}
		switch f.(type) {
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
		out = append(out, ShellQuote(a))
	}
	return strings.Join(out, " ")
}

var shellSafe = lazyRegexp(`^[A-Za-z0-9_@%+=:,./-]+$`)

// ShellQuote quotes s for a POSIX shell when it holds anything but safe
// characters.
func ShellQuote(s string) string {
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

// Suggest is the known name closest to typed when it is a likely typo
// (Levenshtein distance at most 2 and at most half of typed's length), or
// "". No prefix matching: claude's --print must not become --print-config.
func Suggest(typed string, known []string) string {
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

// UnknownCommand is the message for `dual-proxy WORD [ARGS...]` where WORD
// is no command: --version for "version" (it is a flag here, as `go
// version` and `git version` taught users to type it), a suggestion when
// WORD is close to a command, else the list of commands, and the `run --`
// form only when WORD looks like a program the user meant to run behind
// the proxy (runnable: on PATH, a path, or a known agent); "nope" got
// `dual-proxy run -- nope`, a command that cannot work.
func UnknownCommand(args []string, cmds []*cli.Command) string {
	word := args[0]
	if word == "version" {
		return "dual-proxy: unknown command \"version\"; the version is a flag: dual-proxy --version"
	}
	names := commandNames(cmds)
	s := Suggest(word, names)
	if runnable(word) {
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = ShellQuote(a)
		}
		msg := fmt.Sprintf("dual-proxy: unknown command %q; to run %s behind the proxy: dual-proxy run -- %s", word, ShellQuote(word), strings.Join(quoted, " "))
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
// nope`).
func unknownHelpTopic(prog, word string, cmds []*cli.Command) string {
	if word == "version" {
		return prog + ": the version is a flag, not a command: " + prog + " --version"
	}
	names := commandNames(cmds)
	if s := Suggest(word, names); s != "" {
		return fmt.Sprintf("%s help: %q is no command; did you mean `%s help %s`?", prog, word, prog, s)
	}
	return fmt.Sprintf("%s help: %q is no command (help topics: %s)", prog, word, strings.Join(names, ", "))
}

// reNoHelpTopic is urfave/cli's answer (exit 3) to `dual-proxy help X`,
// `dual-proxy pool X` and `dual-proxy pool help X` for an X that is no
// command.
var reNoHelpTopic = lazyRegexp(`^No help topic for '(.*)'$`)

// NoHelpTopic is the word of urfave/cli's "No help topic for 'WORD'" in
// msg, ok false when msg is not that answer.
func NoHelpTopic(msg string) (word string, ok bool) {
	if sub := reNoHelpTopic().FindStringSubmatch(msg); sub != nil {
		return sub[1], true
	}
	return "", false
}

// UnknownTopic is the message for a level args name without the command
// word: the pool subcommands after "pool", else the program's commands as
// help topics (exit 2): `dual-proxy WORD` itself is serve's
// unknownCommand, so urfave/cli answers "No help topic" at the top level
// only to a help request.
func UnknownTopic(app *cli.App, args []string, word string) string {
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
				if s := Suggest(word, names); s != "" {
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

// NotFound is the one-line message for a child command that cannot be
// found (exit 127, SPEC RUN-3): how to install a known agent, and for
// claude-dual-proxy the --command flag.
func NotFound(prog string, k Kind, command string) string {
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
	if k == Claude {
		hints = append(hints, "or point --command (CLAUDE_COMMAND) at the executable")
	}
	if len(hints) > 0 {
		msg += " (" + strings.Join(hints, "; ") + ")"
	}
	return msg
}
