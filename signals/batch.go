package signals

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Windows runs a .cmd or .bat file (npm's claude.cmd, codex.cmd, gemini.cmd shims) under
// cmd.exe, which parses the command line with its own rules before the script sees it, and
// again where the script expands %* into its own command line: & | < > ( ) ^ end or redirect
// the command outside double quotes, %NAME% expands everywhere. Go's os/exec quotes for the
// C runtime's rules only, so an argument "x&calc" started a second command (the BatBadBut bug
// class). The functions here make every argument reach the program the script runs byte-exact,
// or refuse it:
//
//   - an npm shim (the .cmd file npm, pnpm and yarn write for a package's bin) is not run at
//     all: parseNpmShim reads which script it hands to node.exe, and node.exe runs that script
//     with the arguments under the C runtime's quoting only, which node reads back exactly;
//   - any other .cmd or .bat runs under cmd.exe with a command line batchCommandLine builds:
//     every argument quoted so that no metacharacter is live in either parse; an argument with a
//     " or a % is refused, since no quoting carries them through every cmd.exe the same way
//     (a "" is one " for node's C runtime but ends the argument for Go's and for
//     CommandLineToArgvW; the %%cd:~,% escape that real cmd.exe needs arrives expanded under
//     Wine's cmd.exe, which re-expands what %* substituted).
//
// They are pure functions, tested on every OS; run_windows.go applies them.

// isBatchFile reports whether path names a file Windows runs under cmd.exe (.cmd or .bat, in
// any case).
func isBatchFile(path string) bool {
	switch strings.ToLower(filepath.Ext(strings.ReplaceAll(path, `\`, "/"))) {
	case ".cmd", ".bat":
		return true
	}
	return false
}

// BatchArgError is the error for an argument that no cmd.exe command line can carry to a .cmd
// or .bat program unchanged (SPEC PLAT-3): cmd.exe ends the command at a line break, a NUL
// cannot be in a Windows command line at all, and " and % have no quoting that every cmd.exe
// reads the same way (see the top of this file).
type BatchArgError struct {
	// Script is the .cmd or .bat file.
	Script string
	// Index is the argument's position (0: the script's own name).
	Index int
	// Reason says what the argument holds, "holds a line break".
	Reason string
}

// Error names the argument, the script and the way out.
func (e *BatchArgError) Error() string {
	return fmt.Sprintf("argument %d cannot be passed to %s unchanged: it %s, which cmd.exe (which runs .cmd and .bat files) does not pass on reliably; nothing was started (run the program the script starts directly)",
		e.Index, filepath.Base(strings.ReplaceAll(e.Script, `\`, "/")), e.Reason)
}

// batchSafe are the ASCII characters an argument may hold without quotes; any other ASCII
// character, control character or empty argument gets double quotes (the list cmd.exe and the
// C runtime both read as plain text).
const batchSafe = `#$*+-./:?@\_`

// batchCommandLine returns the command line for running script (a .cmd or .bat file, as an
// absolute path) with args through cmd.exe:
//
//	cmd.exe /e:ON /v:OFF /d /c ""SCRIPT" ARG..."
//
// /d skips the AutoRun commands of the registry, /v:OFF turns delayed (!NAME!) expansion off,
// /e:ON keeps the command extensions scripts use (%~dp0). Each argument that is not plain text is
// put in double quotes, with its trailing backslashes doubled (the C runtime's rule): cmd.exe
// toggles its quote state at every ", so with no " inside an argument all of it stays quoted
// for each parse, the one of this command line and the one after the script's %*, and neither
// & | < > ( ) ^ nor a space is live. An argument holding a line break, a NUL, a " or a % is
// refused with a *BatchArgError.
func batchCommandLine(script string, args []string) (string, error) {
	if strings.ContainsAny(script, "\"\r\n\x00") || strings.HasSuffix(script, `\`) {
		return "", &BatchArgError{Script: script, Index: 0, Reason: `is a file name with a ", a line break or a trailing \`}
	}
	var b strings.Builder
	b.WriteString(`cmd.exe /e:ON /v:OFF /d /c ""`)
	b.WriteString(script)
	b.WriteByte('"')
	for i, a := range args {
		if reason := batchRefused(a); reason != "" {
			return "", &BatchArgError{Script: script, Index: i + 1, Reason: reason}
		}
		b.WriteByte(' ')
		appendBatchArg(&b, a)
	}
	b.WriteByte('"')
	return b.String(), nil
}

// batchRefused says why batchCommandLine refuses argument a, or "".
func batchRefused(a string) string {
	j := strings.IndexAny(a, "\r\n\x00\"%")
	switch {
	case j < 0:
		return ""
	case a[j] == 0:
		return "holds a NUL byte"
	case a[j] == '"':
		return `holds a double quote (")`
	case a[j] == '%':
		return "holds a percent sign (%)"
	}
	return "holds a line break"
}

// appendBatchArg appends one argument of batchCommandLine (batchRefused found none of
// " % CR LF NUL in it).
func appendBatchArg(b *strings.Builder, a string) {
	quote := a == "" || strings.HasSuffix(a, `\`)
	for _, r := range a {
		if r < 0x80 && !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(batchSafe, r)) ||
			r >= 0x80 && r < 0xa0 {
			quote = true
			break
		}
	}
	if quote {
		b.WriteByte('"')
	}
	b.WriteString(a)
	if quote {
		b.WriteString(strings.Repeat(`\`, len(a)-len(strings.TrimRight(a, `\`))))
		b.WriteByte('"')
	}
}
