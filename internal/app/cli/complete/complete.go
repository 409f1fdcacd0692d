package complete

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

// RequestFlag is the argument the completion scripts append to ask the
// program for candidate words (the name urfave/cli's scripts use; Answer
// answers it).
const RequestFlag = "--generate-bash-completion"

// cmdNode is one command of a program's tree: its path below the program
// ("" for the program itself, "pool test"), its visible flags (help and
// version included, as urfave/cli adds them), visible subcommands and the
// values of its first argument.
type cmdNode struct {
	path  string
	flags []cli.Flag
	subs  []*cli.Command
	args  []string
}

// commandTree lists app's commands, the program first, depth first.
func (s *Spec) commandTree(app *cli.App) []cmdNode {
	root := cmdNode{flags: append(visibleFlags(app.Flags), cli.HelpFlag), subs: visibleCommands(app.Commands)}
	if app.Version != "" && !app.HideVersion {
		root.flags = append(root.flags, cli.VersionFlag)
	}
	var help *cmdNode
	if !app.HideHelpCommand && len(root.subs) > 0 {
		// urfave/cli adds "help [COMMAND]" when the app runs: offer it and
		// the commands it explains.
		help = &cmdNode{path: "help", flags: []cli.Flag{cli.HelpFlag}}
		for _, c := range root.subs {
			help.args = append(help.args, c.Name)
		}
		root.subs = append(root.subs, &cli.Command{Name: "help", Usage: "show the commands, or one command's help"})
	}
	nodes := []cmdNode{root}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := strings.TrimSpace(prefix + " " + c.Name)
			nodes = append(nodes, cmdNode{path: p, flags: append(visibleFlags(c.Flags), cli.HelpFlag),
				subs: visibleCommands(c.Subcommands), args: s.Args[c.Name]})
			walk(p, visibleCommands(c.Subcommands))
		}
	}
	walk("", visibleCommands(root.subs))
	if help != nil {
		nodes = append(nodes, *help)
	}
	return nodes
}

// visibleCommands drops hidden commands and urfave/cli's own "help"
// command, which completion never offers (it is a positional argument
// below the top level).
func visibleCommands(cmds []*cli.Command) []*cli.Command {
	var out []*cli.Command
	for _, c := range cmds {
		if !c.Hidden && c.Name != "help" {
			out = append(out, c)
		}
	}
	return out
}

// visibleFlags drops hidden flags.
func visibleFlags(flags []cli.Flag) []cli.Flag {
	var out []cli.Flag
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); !ok || v.IsVisible() {
			out = append(out, f)
		}
	}
	return out
}

// Answer answers a completion request (the scripts call the program with
// the words before the cursor, the word being completed — "" when none,
// "-" for a lone "--" — and --generate-bash-completion) from commandTree,
// one candidate a line, without parsing a flag or reading a setting
// (urfave/cli's own answer parsed the words: a flag waiting for its value
// swallowed the request, and a bad LISTEN_PORT in the environment made every
// TAB print a panic). It walks the words as the fish function does (flags
// and their values skipped, "--" ends it: the child's words), then offers
// the value of a flag waiting for one (Spec.Flags, Spec.PoolFlag), the
// command's flags for a word starting with '-', else its subcommands and
// the values of its next argument (Spec.Args, Spec.PoolTest).
func (s *Spec) Answer(w io.Writer, app *cli.App, words, env []string) {
	if len(words) == 0 {
		return
	}
	cur, words := words[len(words)-1], words[:len(words)-1]
	if cur == `""` {
		cur = "" // PowerShell's script passes an empty word so (5.1 drops a bare '')
	}
	nodes, valued := map[string]cmdNode{}, map[string]string{}
	for _, n := range s.commandTree(app) {
		nodes[n.path] = n
		for _, f := range n.flags {
			for _, name := range f.Names() {
				if takesValue(f) {
					valued[flagOption(name)] = f.Names()[0]
				}
			}
		}
	}
	path, waiting := "", ""
	var pos []string
	for _, wd := range words {
		switch {
		case waiting != "":
			waiting = ""
		case wd == "--":
			return
		case strings.HasPrefix(wd, "-") && wd != "-":
			if !strings.Contains(wd, "=") {
				waiting = valued[wd]
			}
		case len(pos) == 0 && nodes[strings.TrimSpace(path+" "+wd)].path != "":
			path = strings.TrimSpace(path + " " + wd)
		default:
			pos = append(pos, wd)
		}
	}
	offer := func(cands []string) {
		for _, c := range cands {
			if strings.HasPrefix(c, cur) {
				fmt.Fprintln(w, c)
			}
		}
	}
	if waiting != "" {
		offer(s.Flags[waiting])
		if f := s.configFlag(waiting); f != nil {
			offer(f(s.readConfigNames(words, env), nil))
		}
		return
	}
	n := nodes[path]
	if strings.HasPrefix(cur, "-") {
		for _, f := range n.flags {
			for _, name := range f.Names() {
				if opt := flagOption(name); strings.HasPrefix(opt, cur) && opt != cur {
					fmt.Fprintln(w, opt)
				}
			}
		}
		return
	}
	if len(pos) == 0 {
		for _, s := range n.subs {
			offer([]string{s.Name})
		}
		offer(n.args)
	}
	if f := s.configArgs(path); f != nil {
		offer(f(s.readConfigNames(words, env), pos))
	}
}

// flagOption is how name is written on the command line: -x or --name.
func flagOption(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// Fish is the fish script for app: one function that finds the
// command path on the command line (skipping flags and their values,
// stopping at "--", whose words belong to the child), then per command its
// subcommands, argument values and flags under that path.
func (s *Spec) Fish(app *cli.App) string {
	nodes := s.commandTree(app)
	fn := "__" + strings.ReplaceAll(app.Name, "-", "_") + "_at"
	ask := "__" + strings.ReplaceAll(app.Name, "-", "_") + "_ask"
	var paths, valued []string
	seen := map[string]bool{}
	for _, n := range nodes {
		if n.path != "" {
			paths = append(paths, fishQuote(n.path))
		}
		for _, f := range n.flags {
			if takesValue(f) {
				for _, name := range f.Names() {
					if opt := flagOption(name); !seen[opt] {
						seen[opt] = true
						valued = append(valued, opt)
					}
				}
			}
		}
	}
	sort.Strings(valued)
	var b strings.Builder
	fmt.Fprintf(&b, "# fish completion for %s (dual-proxy completion fish), generated from its command tree\n", app.Name)
	fmt.Fprintf(&b, fishFunctions, fn, strings.Join(paths, " "), strings.Join(valued, " "), ask)
	for _, n := range nodes {
		at := fishQuote(fn + " " + fishQuote(n.path))
		args := fishQuote(fn + " " + fishQuote(n.path) + " args")
		fmt.Fprintf(&b, "\ncomplete -c %s -n %s -f\n", app.Name, at)
		for _, s := range n.subs {
			fmt.Fprintf(&b, "complete -c %s -n %s -a %s -d %s\n", app.Name, args, fishQuote(s.Name), fishQuote(s.Usage))
		}
		for _, a := range n.args {
			fmt.Fprintf(&b, "complete -c %s -n %s -a %s\n", app.Name, args, fishQuote(a))
		}
		if s.configArgs(n.path) != nil {
			fmt.Fprintf(&b, "complete -c %s -n %s -a %s\n", app.Name, at, fishQuote("("+ask+")"))
		}
		for _, f := range n.flags {
			fmt.Fprintf(&b, "complete -c %s -n %s%s%s -d %s\n", app.Name, at, fishNames(f), s.fishValue(f, ask), fishQuote(flagUsage(f)))
		}
	}
	return b.String()
}

// fishFunctions are the fish script's two functions, given the function
// names and lists (fmt verbs: the "at" function's name, the command paths,
// the flags that take a value, the "ask" function's name): "at" finds the
// command path on the command line (skipping flags and their values,
// stopping at "--"), "ask" asks the program for names from the
// configuration.
const fishFunctions = `function %s --description 'is the command line at command path $argv[1]? (with "args": and no argument given yet)'
    set -l commands %s
    set -l valued %s
    set -l words (commandline -opc)
    set -e words[1]
    set -l path ''
    set -l nargs 0
    set -l skip 0
    for w in $words
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case --
                return 1
            case '-*=*'
                continue
            case '-*'
                contains -- $w $valued; and set skip 1
                continue
        end
        set -l next (string trim -- "$path $w")
        if test $nargs = 0; and contains -- $next $commands
            set path $next
        else
            set nargs (math $nargs + 1)
        end
    end
    test "$path" = "$argv[1]"; or return 1
    test "$argv[2]" != args; or test $nargs = 0
end

function %s --description 'ask the program for the values of the word at the cursor (names from the pool configuration)'
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    $words "$cur" --generate-bash-completion 2>/dev/null
end
`

// fishNames are f's names as fish's -s and -l options.
func fishNames(f cli.Flag) string {
	var s string
	for _, name := range f.Names() {
		if len(name) == 1 {
			s += " -s " + name
		} else {
			s += " -l " + name
		}
	}
	return s
}

// fishValue says whether f takes a value, and whether that value is a
// file, one of Spec.Flags, or a name the program (function ask) reads from
// the configuration.
func (s *Spec) fishValue(f cli.Flag, ask string) string {
	name := f.Names()[0]
	switch {
	case !takesValue(f):
		return ""
	case takesFile(f):
		return " -r -F"
	case s.Flags[name] != nil:
		return " -x -a " + fishQuote(strings.Join(s.Flags[name], " "))
	case s.configFlag(name) != nil:
		return " -x -a " + fishQuote("("+ask+")")
	}
	return " -x"
}

// takesValue reports whether f takes a value (not a bool flag).
func takesValue(f cli.Flag) bool {
	d, ok := f.(cli.DocGenerationFlag)
	return ok && d.TakesValue()
}

// takesFile reports whether f's value is a file name. A flag that wraps
// another (Unwrap) answers for the flag inside.
func takesFile(f cli.Flag) bool {
	if w, ok := f.(interface{ Unwrap() cli.Flag }); ok {
		f = w.Unwrap()
	}
	switch f := f.(type) {
	case *cli.StringFlag:
		return f.TakesFile
	case *cli.PathFlag:
		return f.TakesFile
	case *cli.StringSliceFlag:
		return f.TakesFile
	case *cli.GenericFlag:
		return f.TakesFile
	}
	return false
}

// flagUsage is f's help text, "" when it has none.
func flagUsage(f cli.Flag) string {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		return d.GetUsage()
	}
	return ""
}

// fishQuote is s as one single-quoted fish word.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
