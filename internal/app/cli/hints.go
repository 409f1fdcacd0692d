package cli

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/envrewrite"
)

// Bad flag values: one line naming the flag, or the
// environment variable its value came from. The other usage messages are
// package hint's.

// flagError is a bad flag value found by resolve: exit 2, one line (SPEC
// LIS-5). runApp formats it, naming the environment variable instead of the
// flag when the value came from the environment.
type flagError struct {
	flag string // without dashes
	msg  string
}

func (e *flagError) Error() string { return "--" + e.flag + ": " + e.msg }

// usageError is a bad flag or value, as a flagError: exit 2, one line.
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
