package cli

import (
	"sort"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/manpage"
)

// treeNode is one command as the test reads it straight from the
// definitions: the words that reach it, the subcommand names and argument
// values completion must offer there, and its long flags.
type treeNode struct {
	prog  string
	words []string
	subs  []string
	flags []string
}

// realTree walks the command definitions of both programs (its own walk,
// not commandTree's) into treeNodes.
func realTree(t *testing.T) []treeNode {
	var nodes []treeNode
	var walk func(prog string, words []string, flags []cli.Flag, cmds []*cli.Command, name string)
	walk = func(prog string, words []string, flags []cli.Flag, cmds []*cli.Command, name string) {
		n := treeNode{prog: prog, words: words, flags: []string{"--help"}}
		if len(words) == 0 {
			n.flags = append(n.flags, "--version")
		}
		for _, f := range flags {
			for _, fn := range f.Names() {
				if len(fn) > 1 {
					n.flags = append(n.flags, "--"+fn)
				}
			}
		}
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			n.subs = append(n.subs, c.Name)
			walk(prog, append(append([]string{}, words...), c.Name), c.Flags, c.Subcommands, c.Name)
		}
		n.subs = append(n.subs, argValues[name]...)
		sort.Strings(n.subs)
		sort.Strings(n.flags)
		nodes = append(nodes, n)
	}
	for _, app := range []*cli.App{dualProxyApp(IO{}), claudeApp(IO{})} {
		walk(app.Name, nil, app.Flags, app.Commands, "")
		if !app.HideHelpCommand {
			// urfave/cli's "help [COMMAND]": offered at the top, with the
			// commands as its argument.
			root := &nodes[len(nodes)-1]
			help := treeNode{prog: app.Name, words: []string{"help"}, subs: append([]string(nil), root.subs...), flags: []string{"--help"}}
			root.subs = append(root.subs, "help")
			sort.Strings(root.subs)
			nodes = append(nodes, help)
		}
	}
	if len(nodes) < 8 {
		t.Fatalf("command tree has only %d nodes", len(nodes))
	}
	return nodes
}

func (n treeNode) line() string { return strings.TrimSpace(n.prog + " " + strings.Join(n.words, " ")) }

// checkShell compares what complete(line) offers with the tree: the
// subcommands and argument values after "CMD ", the long flags after
// "CMD --".
func checkShell(t *testing.T, complete func(line string) []string) {
	for _, n := range realTree(t) {
		if got := complete(n.line() + " "); strings.Join(got, " ") != strings.Join(n.subs, " ") {
			t.Errorf("%q completes to %q, the command tree has %q", n.line()+" ", got, n.subs)
		}
		if got := complete(n.line() + " --"); strings.Join(got, " ") != strings.Join(n.flags, " ") {
			t.Errorf("%q completes to %q, the command tree has %q", n.line()+" --", got, n.flags)
		}
	}
}

func TestCompletionMatchesCommandTree(t *testing.T) {
	t.Run("LIS-5/argument-values-are-accepted", func(t *testing.T) {
		for _, sh := range argValues["completion"] {
			if _, err := completionScript(sh, IO{}); err != nil {
				t.Errorf("completion offers %q: %v", sh, err)
			}
		}
		for _, p := range argValues["man"] {
			if _, err := manpage.Page(p, logHint, configHint); err != nil {
				t.Errorf("man offers %q: %v", p, err)
			}
		}
	})
	t.Run("LIS-5/fish-script-names-every-command-and-flag", func(t *testing.T) {
		// Without fish: the script text at least names every path and flag.
		script, err := completionScript("fish", IO{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range realTree(t) {
			if len(n.words) > 0 && !strings.Contains(script, "'"+strings.Join(n.words, " ")+"'") {
				t.Errorf("fish script lacks the command %q", n.line())
			}
			at := "complete -c " + n.prog + " -n '__" + strings.ReplaceAll(n.prog, "-", "_") + "_at \\'" + strings.Join(n.words, " ") + "\\'' "
			for _, f := range n.flags {
				found := false
				for _, l := range strings.Split(script, "\n") {
					found = found || strings.HasPrefix(l, at) && strings.Contains(l, " -l "+f[2:]+" ")
				}
				if !found {
					t.Errorf("fish script lacks %s under %q", f, n.line())
				}
			}
		}
	})
}

// psQuote is s as the PowerShell script quotes it: one single-quoted
// string, each quote (also a typographic one) doubled.
func psQuote(s string) string {
	return "'" + strings.NewReplacer("'", "''", "\u2018", "\u2018\u2018", "\u2019", "\u2019\u2019").Replace(s) + "'"
}
