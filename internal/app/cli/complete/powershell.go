package complete

import (
	"fmt"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"
)

// PowerShell is the PowerShell script for apps:
// like Fish a static table written from commandTree — per
// program its flags that take a value and per command path its
// subcommands, argument values and flags, one line each — and one native
// argument completer that walks the words before the cursor the way the
// fish function does (flags and their values skipped, "--" ends it: the
// child's words get PowerShell's own file completion), then offers the
// flags of that command for a word starting with "-", else its
// subcommands and argument values while no argument is given. A flag's
// value gets file completion (the completer returns nothing).
func (s *Spec) PowerShell(apps ...*cli.App) string {
	var b strings.Builder
	names := make([]string, len(apps))
	for i, app := range apps {
		names[i] = psQuote(app.Name)
	}
	fmt.Fprintf(&b, "# PowerShell completion for %s (dual-proxy completion powershell), generated from the command tree\n", strings.Join(names, ", "))
	b.WriteString("# Load it from $PROFILE: dual-proxy completion powershell | Out-String | Invoke-Expression\n")
	fmt.Fprintf(&b, "Register-ArgumentCompleter -Native -CommandName %s -ScriptBlock {\n", strings.Join(names, ", "))
	b.WriteString("    param($wordToComplete, $commandAst, $cursorPosition)\n    $programs = @{\n")
	for _, app := range apps {
		s.psProgram(&b, app)
	}
	b.WriteString("    }\n" + psWalk + "}\n")
	return b.String()
}

// psProgram writes app's entry of the $programs table.
func (s *Spec) psProgram(b *strings.Builder, app *cli.App) {
	nodes := s.commandTree(app)
	var valued []string
	seen := map[string]bool{}
	for _, n := range nodes {
		for _, f := range n.flags {
			for _, name := range f.Names() {
				if opt := flagOption(name); takesValue(f) && !seen[opt] {
					seen[opt] = true
					valued = append(valued, psQuote(opt))
				}
			}
		}
	}
	sort.Strings(valued)
	fmt.Fprintf(b, "        %s = @{\n            valued = @(%s)\n", psQuote(app.Name), strings.Join(valued, ", "))
	s.psValues(b, nodes)
	b.WriteString("            nodes = @{\n")
	for _, n := range nodes {
		var subs, args, flags []string
		for _, s := range n.subs {
			subs = append(subs, psPair(s.Name, s.Usage))
		}
		for _, a := range n.args {
			args = append(args, psQuote(a))
		}
		for _, f := range n.flags {
			for _, name := range f.Names() {
				flags = append(flags, psPair(flagOption(name), flagUsage(f)))
			}
		}
		fmt.Fprintf(b, "                %s = @{ subs = %s; args = @(%s); flags = %s }\n",
			psQuote(n.path), psPairs(subs), strings.Join(args, ", "), psPairs(flags))
	}
	b.WriteString("            }\n        }\n")
}

// psValues writes the program's flag values: "values", the fixed lists of
// Spec.Flags per option, "ask", the options whose value the program names
// from the configuration (Spec.PoolFlag), and "askPaths", the command
// paths whose arguments it names (Spec.PoolTest).
func (s *Spec) psValues(b *strings.Builder, nodes []cmdNode) {
	var values, ask, paths []string
	seen := map[string]bool{}
	for _, n := range nodes {
		if s.configArgs(n.path) != nil {
			paths = append(paths, psQuote(n.path))
		}
		for _, f := range n.flags {
			for _, name := range f.Names() {
				opt := flagOption(name)
				if seen[opt] || !takesValue(f) {
					continue
				}
				seen[opt] = true
				if vs := s.Flags[f.Names()[0]]; vs != nil {
					var q []string
					for _, v := range vs {
						q = append(q, psQuote(v))
					}
					values = append(values, psQuote(opt)+" = @("+strings.Join(q, ", ")+")")
				} else if s.configFlag(f.Names()[0]) != nil {
					ask = append(ask, psQuote(opt))
				}
			}
		}
	}
	sort.Strings(values)
	sort.Strings(ask)
	fmt.Fprintf(b, "            values = @{ %s }\n            ask = @(%s)\n            askPaths = @(%s)\n",
		strings.Join(values, "; "), strings.Join(ask, ", "), strings.Join(paths, ", "))
}

// psPair is a (text, tooltip) pair; the tooltip falls back to the text
// (CompletionResult refuses an empty one).
func psPair(text, tip string) string {
	if tip == "" {
		tip = text
	}
	return "@(" + psQuote(text) + ", " + psQuote(tip) + ")"
}

// psPairs is a list of pairs: @(p1, p2); one pair is @(,p1), since @(p1)
// would flatten it into its two strings.
func psPairs(pairs []string) string {
	if len(pairs) == 1 {
		return "@(," + pairs[0] + ")"
	}
	return "@(" + strings.Join(pairs, ", ") + ")"
}

// psQuote is s as one single-quoted PowerShell string, each quote doubled.
func psQuote(s string) string {
	return "'" + strings.NewReplacer("'", "''", "\u2018", "\u2018\u2018", "\u2019", "\u2019\u2019").Replace(s) + "'"
}

// psWalk is the completer's body after the table: find the program (a
// path or name.exe works too), the command path and the argument count,
// then answer.
const psWalk = `    $prog = [System.IO.Path]::GetFileNameWithoutExtension($commandAst.CommandElements[0].Extent.Text)
    $tree = $programs[$prog]
    if (-not $tree) { return }
    $words = @($commandAst.CommandElements | Where-Object { $_.Extent.StartOffset -lt $cursorPosition } | ForEach-Object { $_.Extent.Text })
    if ($wordToComplete -ne '' -and $words.Count -gt 0) { $words = @($words | Select-Object -SkipLast 1) }
    # The program names the values read from the configuration: asked with
    # the words, the one being completed ('""' for none: Windows PowerShell
    # drops an empty argument) and --generate-bash-completion.
    $ask = {
        $cur = $wordToComplete
        if ($cur -eq '') { $cur = '""' }
        $rest = @($words | Select-Object -Skip 1)
        foreach ($v in @(& $commandAst.CommandElements[0].Extent.Text @rest $cur '--generate-bash-completion' 2>$null)) {
            if ($v) { [System.Management.Automation.CompletionResult]::new($v, $v, 'ParameterValue', $v) }
        }
    }
    $path = ''
    $nargs = 0
    $skip = $false
    $flag = ''
    foreach ($w in @($words | Select-Object -Skip 1)) {
        if ($skip) { $skip = $false; continue }
        if ($w -eq '--') { return }
        if ($w -like '-*=*') { continue }
        if ($w.StartsWith('-')) { if ($tree.valued -contains $w) { $skip = $true; $flag = $w }; continue }
        $next = ($path + ' ' + $w).Trim()
        if ($nargs -eq 0 -and $tree.nodes.ContainsKey($next)) { $path = $next } else { $nargs++ }
    }
    if ($skip) {
        if ($tree.values.ContainsKey($flag)) {
            foreach ($v in $tree.values[$flag]) {
                if ($v.StartsWith($wordToComplete)) { [System.Management.Automation.CompletionResult]::new($v, $v, 'ParameterValue', $v) }
            }
        } elseif ($tree.ask -contains $flag) { & $ask }
        return
    }
    $node = $tree.nodes[$path]
    if ($wordToComplete.StartsWith('-')) {
        foreach ($f in $node.flags) {
            if ($f[0].StartsWith($wordToComplete)) { [System.Management.Automation.CompletionResult]::new($f[0], $f[0], 'ParameterName', $f[1]) }
        }
        return
    }
    if (-not $wordToComplete.StartsWith('-') -and $tree.askPaths -contains $path) { & $ask; if ($nargs -gt 0) { return } }
    if ($nargs -gt 0) { return }
    foreach ($s in $node.subs) {
        if ($s[0].StartsWith($wordToComplete)) { [System.Management.Automation.CompletionResult]::new($s[0], $s[0], 'Command', $s[1]) }
    }
    foreach ($a in $node.args) {
        if ($a.StartsWith($wordToComplete)) { [System.Management.Automation.CompletionResult]::new($a, $a, 'ParameterValue', $a) }
    }
`
