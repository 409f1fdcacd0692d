package signals

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// npm7Shim and npm6Shim are the .cmd files npm's cmd-shim writes for a package's bin
// (claude.cmd, codex.cmd, gemini.cmd), npm 7 and later and npm 6 (pnpm's without NODE_PATH):
// both run node.exe with the package's script and "%*", which cmd.exe parses a second time.
const (
	npm7Shim = "@ECHO off\r\nGOTO start\r\n:find_dp0\r\nSET dp0=%~dp0\r\nEXIT /b\r\n:start\r\nSETLOCAL\r\nCALL :find_dp0\r\n\r\n" +
		"IF EXIST \"%dp0%\\node.exe\" (\r\n  SET \"_prog=%dp0%\\node.exe\"\r\n) ELSE (\r\n  SET \"_prog=node\"\r\n" +
		"  SET PATHEXT=%PATHEXT:;.JS;=;%\r\n)\r\n\r\n" +
		"endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & \"%_prog%\"  \"%dp0%\\node_modules\\@anthropic-ai\\claude-code\\cli.js\" %*\r\n"
	npm6Shim = "@IF EXIST \"%~dp0\\node.exe\" (\r\n  \"%~dp0\\node.exe\"  \"%~dp0\\node_modules\\@anthropic-ai\\claude-code\\cli.js\" %*\r\n" +
		") ELSE (\r\n  @SETLOCAL\r\n  @SET PATHEXT=%PATHEXT:;.JS;=;%\r\n  node  \"%~dp0\\node_modules\\@anthropic-ai\\claude-code\\cli.js\" %*\r\n)\r\n"
	// plainBatch is a .cmd file that is no npm shim: it runs the program beside it with %*.
	plainBatch = "@\"%~dp0\\child.exe\" %*\r\n"
)

// The command line for a .cmd or .bat file that is no npm shim, and the refusals, as pure
// functions: tested on every OS (SPEC PLAT-3). The Wine run starts real children through them
// (batch_windows_test.go).
func TestBatchCommandLine(t *testing.T) {
	const script = `C:\npm & co\tool.cmd`
	cases := []struct {
		args []string
		want string
	}{
		{nil, `cmd.exe /e:ON /v:OFF /d /c ""C:\npm & co\tool.cmd""`},
		{[]string{"-p", "plain/word_1.2"}, `cmd.exe /e:ON /v:OFF /d /c ""C:\npm & co\tool.cmd" -p plain/word_1.2"`},
		{[]string{"x&echo INJECTED", "a|b", "<in", ">out", "^", "!PATH!", "(p)"},
			`cmd.exe /e:ON /v:OFF /d /c ""C:\npm & co\tool.cmd" "x&echo INJECTED" "a|b" "<in" ">out" "^" "!PATH!" "(p)""`},
		{[]string{"", " ", `trailing\`, `C:\a b\\`, `in\side`},
			`cmd.exe /e:ON /v:OFF /d /c ""C:\npm & co\tool.cmd" "" " " "trailing\\" "C:\a b\\\\" in\side"`},
		{[]string{"ü€", "\u0085"}, "cmd.exe /e:ON /v:OFF /d /c \"\"C:\\npm & co\\tool.cmd\" ü€ \"\u0085\"\""},
	}
	for _, c := range cases {
		t.Run("PLAT-3/quoted-"+strings.Join(c.args, ","), func(t *testing.T) {
			got, err := batchCommandLine(script, c.args)
			if err != nil || got != c.want {
				t.Fatalf("batchCommandLine(%q) = %s, %v\nwant %s", c.args, got, err, c.want)
			}
		})
	}
	t.Run("PLAT-3/refused-quote-percent-line-break-nul", func(t *testing.T) {
		for _, a := range []string{`say "hi"`, "100%PATH%", "%", "a\nb", "a\rb", "a\x00b"} {
			_, err := batchCommandLine(script, []string{"ok", a})
			var be *BatchArgError
			if !errors.As(err, &be) || be.Index != 2 || !strings.Contains(err.Error(), "argument 2 cannot be passed to tool.cmd unchanged") {
				t.Errorf("argument %q: %v, want a BatchArgError for argument 2", a, err)
			}
		}
		for _, s := range []string{`C:\a"b.cmd`, `C:\dir\`} {
			if _, err := batchCommandLine(s, nil); err == nil {
				t.Errorf("script %q accepted", s)
			}
		}
	})
	t.Run("PLAT-3/batch-file-names", func(t *testing.T) {
		for p, want := range map[string]bool{`C:\x\claude.cmd`: true, `C:\x\A.BAT`: true, `C:\x\node.exe`: false,
			`C:\x.cmd\tool`: false, "claude": false, "/usr/bin/x.Cmd": true} {
			if got := isBatchFile(p); got != want {
				t.Errorf("isBatchFile(%q) = %v, want %v", p, got, want)
			}
		}
	})
}

// An npm shim is recognized only when every line is one of npm's templates (SPEC PLAT-3).
func TestParseNpmShim(t *testing.T) {
	const cli = `node_modules\@anthropic-ai\claude-code\cli.js`
	for name, body := range map[string]string{"npm7": npm7Shim, "npm6": npm6Shim} {
		t.Run("PLAT-3/"+name+"-template-runs-node-with-the-script", func(t *testing.T) {
			got, ok := parseNpmShim(body)
			if !ok || got.Script != cli || len(got.Args) != 0 {
				t.Fatalf("parseNpmShim = %+v, %v; want script %s", got, ok, cli)
			}
		})
	}
	t.Run("PLAT-3/shebang-arguments-before-the-script", func(t *testing.T) {
		body := strings.ReplaceAll(npm7Shim, `"%_prog%"  "%dp0%`, `"%_prog%"  --harmony --max-old-space-size=4096 "%dp0%`)
		got, ok := parseNpmShim(body)
		if !ok || !slices.Equal(got.Args, []string{"--harmony", "--max-old-space-size=4096"}) || got.Script != cli {
			t.Fatalf("parseNpmShim = %+v, %v", got, ok)
		}
	})
	others := map[string]string{
		"plain-batch":         plainBatch,
		"pnpm-node-path":      "@SETLOCAL\r\n@SET \"NODE_PATH=C:\\x\"\r\n" + npm6Shim,
		"extra-command":       npm7Shim + "del C:\\x\r\n",
		"other-program":       strings.ReplaceAll(npm7Shim, `SET "_prog=node"`, `SET "_prog=sh"`),
		"script-with-percent": strings.ReplaceAll(npm6Shim, "cli.js", "%X%.js"),
		"no-run-line":         "@ECHO off\r\n",
		"two-scripts":         strings.Replace(npm6Shim, "cli.js", "other.js", 1),
		"shebang-metachar":    strings.ReplaceAll(npm7Shim, `"%_prog%"  "%dp0%`, `"%_prog%" a&b "%dp0%`),
	}
	for name, body := range others {
		t.Run("PLAT-3/not-a-shim-"+name, func(t *testing.T) {
			if got, ok := parseNpmShim(body); ok {
				t.Fatalf("parseNpmShim = %+v, true; want not a shim", got)
			}
		})
	}
}
