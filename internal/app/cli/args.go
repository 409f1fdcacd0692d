package cli

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/hint"
)

// argLimits is how many positional arguments a command takes: urfave/cli
// hands every extra word to the action, which ignored it, so
// `dual-proxy status extra` printed the status as if "extra" meant
// something (an invalid argument is an error naming it).
// Commands not listed check their own arguments (run, pool test) or take
// none and have subcommands (pool, answered by unknownTopic).
var argLimits = map[string]int{"status": 0, "demo": 0, "completion": 1, "man": 1}

// limitArgs wraps the action of each command of cmds listed in argLimits
// with the check of its argument count.
func limitArgs(app string, cmds []*cli.Command) {
	for _, cmd := range cmds {
		limit, ok := argLimits[cmd.Name]
		if !ok || cmd.Action == nil {
			continue
		}
		action, cmd := cmd.Action, cmd
		cmd.Action = func(c *cli.Context) error {
			if c.NArg() > limit {
				return cli.Exit(extraArgs(app+" "+cmd.Name, c.Args().Get(limit), limit, cmd), 2)
			}
			return action(c)
		}
	}
}

// extraArgs is the one-line error for word, the first argument past the
// limit of cmd (named as prog): what the command takes and, where the word
// looks like a flag of cmd without its dashes or like an --addr value,
// that flag.
func extraArgs(prog, word string, limit int, cmd *cli.Command) string {
	takes := "takes no arguments"
	if limit == 1 {
		takes = "takes one argument"
		if vs := argValues[cmd.Name]; len(vs) > 0 {
			takes += " (" + strings.Join(vs, ", ") + ")"
		}
	}
	msg := fmt.Sprintf("%s: unexpected argument %q: %s %s", prog, word, cmd.Name, takes)
	if hint := flagFor(word, cmd.Flags); hint != "" {
		msg += "; did you mean `" + prog + " " + hint + "`?"
	}
	return msg
}

// flagFor is the flag word probably meant: "--json" for "json" or "jsno",
// "--addr 7898" for a port or HOST:PORT when cmd has --addr; "" when
// nothing fits.
func flagFor(word string, flags []cli.Flag) string {
	var names []string
	hasAddr := false
	for _, f := range flags {
		for _, n := range f.Names() {
			if len(n) > 1 {
				names = append(names, n)
				hasAddr = hasAddr || n == "addr"
			}
		}
	}
	if hasAddr && looksLikeAddr(word) {
		return "--addr " + word
	}
	if s := hint.Suggest(strings.TrimLeft(word, "-"), names); s != "" {
		return "--" + s
	}
	return ""
}

// looksLikeAddr reports whether s is a port or HOST:PORT.
func looksLikeAddr(s string) bool {
	if p, err := strconv.Atoi(s); err == nil {
		return p > 0 && p < 65536
	}
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return false
	}
	_, err = strconv.Atoi(port)
	return err == nil
}

// versionExtra is the App.Metadata key under which printVersion leaves
// the first word given with --version (runApp reports it).
const versionExtra = "version-extra"

func init() {
	// urfave/cli's hook for --version (a package variable, set once here:
	// both programs use the same printer).
	cli.VersionPrinter = printVersion
}

// printVersion prints "PROG version V" as urfave/cli's own printer does,
// unless a word came with --version: `dual-proxy --version extra` printed
// the version as if "extra" meant something (SPEC LIS-5, PLAT-2); then it
// prints nothing and leaves the word for runApp's one-line error.
func printVersion(c *cli.Context) {
	if c.NArg() > 0 {
		if c.App.Metadata == nil {
			c.App.Metadata = map[string]any{}
		}
		c.App.Metadata[versionExtra] = c.Args().First()
		return
	}
	fmt.Fprintf(c.App.Writer, "%s version %s\n", c.App.Name, c.App.Version)
}

// versionError is the one-line error for a word given with --version, ""
// when there was none.
func versionError(app *cli.App) string {
	word, ok := app.Metadata[versionExtra].(string)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s: unexpected argument %q: --version takes no arguments (%s --version)", app.Name, word, app.Name)
}

// dashDashValue is the one-line error for a flag that takes a value given
// right before "--" (`dual-proxy run --pool -- claude`): Go's flag parser
// takes the "--" as the value, so the launcher looked up a pool named "--"
// (or claude-dual-proxy ran a command "--") and the child's words became
// flags or a command of ours. "" when there is none. args are
// the whole command line; only words before the first "--" count.
func dashDashValue(app *cli.App, args []string) string {
	flags := allFlags(app)
	for _, c := range app.Commands {
		for _, sc := range c.Subcommands {
			flags = append(flags, sc.Flags...)
		}
	}
	prog := app.Name
	for i := 1; i < len(args) && args[i] != "--"; i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			if prog == app.Name && app.Command(a) != nil {
				prog = app.Name + " " + a
			}
			continue
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") || i+1 >= len(args) || args[i+1] != "--" {
			continue
		}
		if f := findFlag(flags, name); f != nil && takesValue(f) {
			return fmt.Sprintf("%s: %s needs a value (%s VALUE or %s=VALUE), not the -- that ends the flags", prog, a, a, a)
		}
	}
	return ""
}

// takesValue reports whether f takes a value (not a bool flag).
func takesValue(f cli.Flag) bool {
	d, ok := f.(cli.DocGenerationFlag)
	return ok && d.TakesValue()
}
