package cli

import (
	"strconv"
	"strings"
	"testing"
)

// pwsh is not installable with apt here (it comes from Microsoft's own
// repository), so the PowerShell script is checked by its structure: its
// table against the command definitions (realTree, not commandTree's walk)
// and its brackets outside strings.
func TestPowerShellCompletion(t *testing.T) {
	script, err := completionScript("powershell", IO{})
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	for _, prog := range []string{"dual-proxy", "claude-dual-proxy"} {
		head := "        '" + prog + "' = @{\n"
		i := strings.Index(script, head)
		if i < 0 {
			t.Fatalf("no table for %s:\n%s", prog, script)
		}
		block := script[i+len(head):]
		blocks[prog] = block[:strings.Index(block, "\n        }\n")]
	}
	t.Run("LIS-5/powershell-table-offers-every-command-and-flag", func(t *testing.T) {
		for _, n := range realTree(t) {
			var line string
			for _, l := range strings.Split(blocks[n.prog], "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), psQuote(strings.Join(n.words, " "))+" = @{ ") {
					line = l
				}
			}
			if line == "" {
				t.Errorf("no entry for %q", n.line())
				continue
			}
			subs, rest, _ := strings.Cut(line, "; flags = ")
			for _, s := range n.subs {
				if !strings.Contains(subs, psQuote(s)) {
					t.Errorf("%q: no %s", n.line(), s)
				}
			}
			for _, f := range n.flags {
				if !strings.Contains(rest, "@("+psQuote(f)+", ") {
					t.Errorf("%q: no %s", n.line(), f)
				}
			}
		}
	})
	t.Run("LIS-5/powershell-offers-flag-and-argument-values", func(t *testing.T) {
		for prog, want := range map[string][]string{
			"dual-proxy": {"values = @{ '--log-format' = @('text', 'json'); '--log-level' = @('debug', 'info', 'warn', 'error') }\n",
				"ask = @('--pool')\n", "askPaths = @('pool test')\n", "'help' = @{ subs = @(); args = @('run', 'demo', 'status', 'settings', 'pool', 'completion', 'man');"},
			"claude-dual-proxy": {"values = @{ '--log-format' = @('text', 'json'); '--log-level' = @('debug', 'info', 'warn', 'error') }\n",
				"ask = @('--pool')\n", "askPaths = @()\n"},
		} {
			for _, w := range want {
				if !strings.Contains(blocks[prog], w) {
					t.Errorf("%s's table lacks %q:\n%s", prog, w, blocks[prog])
				}
			}
		}
		// The walk answers a waiting flag from values, else asks the
		// program (with '""' for an empty word), and asks for askPaths.
		for _, w := range []string{"$tree.values[$flag]", "elseif ($tree.ask -contains $flag) { & $ask }", "$tree.askPaths -contains $path",
			"if ($cur -eq '') { $cur = '\"\"' }", "@rest $cur '--generate-bash-completion'"} {
			if !strings.Contains(script, w) {
				t.Errorf("the completer lacks %q", w)
			}
		}
	})
	t.Run("LIS-5/powershell-skips-values-of-valued-flags-only", func(t *testing.T) {
		valued := blocks["dual-proxy"][:strings.Index(blocks["dual-proxy"], "\n")]
		for _, f := range []string{"--config", "--listen-port", "--addr", "--gateway"} {
			if !strings.Contains(valued, psQuote(f)) {
				t.Errorf("%s takes a value: %s", f, valued)
			}
		}
		for _, f := range []string{"--json", "--print-config", "--verify-tls", "--help"} {
			if strings.Contains(valued, psQuote(f)) {
				t.Errorf("%s takes no value: %s", f, valued)
			}
		}
	})
	t.Run("LIS-5/powershell-script-shape", func(t *testing.T) {
		if !strings.Contains(script, "Register-ArgumentCompleter -Native -CommandName 'dual-proxy', 'claude-dual-proxy' -ScriptBlock {\n    param($wordToComplete, $commandAst, $cursorPosition)\n") {
			t.Fatal("no native completer for both programs")
		}
		// One-pair lists keep their pair (@(,@(…))), quotes are doubled.
		for _, want := range []string{"'pool' = @{ subs = @(,@('test', ", "launcher''s"} {
			if !strings.Contains(script, want) {
				t.Errorf("no %q", want)
			}
		}
		if err := psBalanced(script); err != "" {
			t.Fatal(err)
		}
	})
}

// psBalanced checks that (), {} and [] pair up outside single-quoted
// strings (a doubled quote is one quote) and comments; "" when they do.
func psBalanced(s string) string {
	var stack []rune
	pair := map[rune]rune{')': '(', '}': '{', ']': '['}
	inStr := false
	for line, text := range strings.Split(s, "\n") {
		rs := []rune(text)
		for i := 0; i < len(rs); i++ {
			c := rs[i]
			switch {
			case inStr && c == '\'' && i+1 < len(rs) && rs[i+1] == '\'':
				i++
			case c == '\'':
				inStr = !inStr
			case inStr:
			case c == '#':
				i = len(rs)
			case c == '(' || c == '{' || c == '[':
				stack = append(stack, c)
			case pair[c] != 0:
				if len(stack) == 0 || stack[len(stack)-1] != pair[c] {
					return "unbalanced " + string(c) + " on line " + strconv.Itoa(line+1) + ": " + text
				}
				stack = stack[:len(stack)-1]
			}
		}
		if inStr {
			return "string runs past the end of line: " + text
		}
	}
	if len(stack) > 0 {
		return "unclosed " + string(stack)
	}
	return ""
}
