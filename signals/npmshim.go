package signals

import (
	"strings"
)

// npmShim is what an npm shim does: run node.exe (the one beside the shim, else node from PATH)
// with Args, the script Script (relative to the shim's directory, backslashes) and the shim's
// own arguments.
type npmShim struct {
	Args   []string
	Script string
}

// npmShimLines are the lines of the two .cmd templates of npm's cmd-shim (npm 7 and later;
// npm 6 and pnpm's, which is the same without NODE_PATH) other than the line that runs node,
// as normalizeShimLine leaves them. A shim with any other line (pnpm's NODE_PATH, a hand-made
// script) is not skipped: what it does is not known.
var npmShimLines = map[string]bool{
	"echo off": true, "goto start": true, ":find_dp0": true, "set dp0=%~dp0": true, "exit /b": true,
	":start": true, "setlocal": true, "call :find_dp0": true,
	`if exist "%dp0%\node.exe" (`: true, `set "_prog=%dp0%\node.exe"`: true, ") else (": true,
	`set "_prog=node"`: true, "set pathext=%pathext:;.js;=;%": true, ")": true,
	`if exist "%~dp0\node.exe" (`: true,
}

// npmShimRuns are the starts of the line that runs node in those templates, as
// normalizeShimLine leaves them.
var npmShimRuns = []string{
	`endlocal & goto #_undefined_# 2>nul || title %comspec% & "%_prog%"`,
	`"%~dp0\node.exe"`,
	"node",
}

// normalizeShimLine trims a line of a shim, drops its leading @ (echo off per line) and folds
// ASCII case (cmd.exe's keywords and variable names are case-insensitive).
func normalizeShimLine(l string) string {
	return strings.ToLower(strings.TrimPrefix(strings.TrimSpace(l), "@"))
}

// parseNpmShim reports what the .cmd file body does when it is one of npm's shims and does
// nothing else; ok is false for any other script. The line that runs node must end with
// "%dp0%\SCRIPT" %* (or "%~dp0\SCRIPT" %*), and the arguments before the script (a shebang's,
// --harmony) must be plain words; every line that runs node must name the same script.
func parseNpmShim(body string) (shim npmShim, ok bool) {
	found := false
	for _, raw := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n") {
		l := normalizeShimLine(raw)
		if l == "" || npmShimLines[l] {
			continue
		}
		s, ok := parseShimRun(strings.TrimPrefix(strings.TrimSpace(raw), "@"))
		if !ok || found && (s.Script != shim.Script || strings.Join(s.Args, " ") != strings.Join(shim.Args, " ")) {
			return npmShim{}, false
		}
		shim, found = s, true
	}
	return shim, found
}

// parseShimRun parses a line that runs node (raw: trimmed, without @; the script keeps its case).
func parseShimRun(raw string) (npmShim, bool) {
	l := strings.ToLower(raw)
	var rest string
	for _, start := range npmShimRuns {
		if strings.HasPrefix(l, start+" ") {
			rest = raw[len(start):]
			break
		}
	}
	rest = strings.TrimSpace(rest)
	if !strings.HasSuffix(rest, "%*") {
		return npmShim{}, false
	}
	rest = strings.TrimSpace(strings.TrimSuffix(rest, "%*"))
	if len(rest) < 2 || !strings.HasSuffix(rest, `"`) {
		return npmShim{}, false
	}
	k := strings.LastIndex(rest[:len(rest)-1], `"`)
	if k < 0 {
		return npmShim{}, false
	}
	quoted := rest[k+1 : len(rest)-1]
	var script string
	for _, dir := range []string{`%dp0%\`, `%~dp0\`} {
		if len(quoted) > len(dir) && strings.EqualFold(quoted[:len(dir)], dir) {
			script = quoted[len(dir):]
		}
	}
	if script == "" || strings.ContainsAny(script, "%!^&|<>\"") {
		return npmShim{}, false
	}
	args := strings.Fields(rest[:k])
	for _, a := range args {
		if !plainWord(a) {
			return npmShim{}, false
		}
	}
	return npmShim{Args: args, Script: script}, true
}

// plainWord reports whether a is a word that neither cmd.exe nor a C runtime reads as anything
// but itself (letters, digits, batchSafe, =).
func plainWord(a string) bool {
	for _, r := range a {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '=' || strings.ContainsRune(batchSafe, r)) {
			return false
		}
	}
	return a != ""
}
