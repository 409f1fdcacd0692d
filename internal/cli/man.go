package cli

import (
	"embed"
	"fmt"
	"strings"
)

// The man pages are generated from the command-line definitions by
// urfave/cli's ToMan (Markdown rendered to roff by go-md2man and
// blackfriday) in TestManPages, which writes them to man/*.1 with
// placeholders where each OS names its default files, and checks that the
// page printed here equals what ToMan renders for linux, darwin and windows.
// The binary only fills in the placeholders: the release build
// (-tags urfave_cli_no_docs) links neither Markdown renderer, whose package
// initialisation cost every start ≈ 0.5 ms.
//
//go:embed man/dual-proxy.1 man/claude-dual-proxy.1
var manPages embed.FS

// manLogHint and manConfigHint stand for logHint and configHint in the
// embedded pages.
const (
	manLogHint    = "@@LOG_FILE@@"
	manConfigHint = "@@CONFIG_FILE@@"
)

// manPage returns the man page of program ("" or "dual-proxy", or
// "claude-dual-proxy") with the host's default files.
func manPage(program string) (string, error) {
	switch program {
	case "":
		program = "dual-proxy"
	case "dual-proxy", "claude-dual-proxy":
	default:
		return "", fmt.Errorf("want dual-proxy or claude-dual-proxy, got %q", program)
	}
	page, err := manPages.ReadFile("man/" + program + ".1")
	if err != nil {
		return "", err
	}
	return fillManPage(string(page), logHint, configHint), nil
}

// fillManPage puts the default files logFile and configFile into page's
// placeholders, as roff text (a backslash is roff's escape character:
// Windows paths get \\, as go-md2man writes them).
func fillManPage(page, logFile, configFile string) string {
	return strings.NewReplacer(manLogHint, roffText(logFile), manConfigHint, roffText(configFile)).Replace(page)
}

// roffText escapes s for the middle of a roff text line.
func roffText(s string) string {
	return strings.ReplaceAll(s, `\`, `\\`)
}
