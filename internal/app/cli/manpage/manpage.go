// Package manpage holds the man pages of dual-proxy and claude-dual-proxy
// (roff, section 1) and fills in each OS's default files.
//
// The pages are generated from the command-line definitions by
// urfave/cli's ToMan (Markdown rendered to roff by go-md2man and
// blackfriday) in internal/app/cli's TestManPages, which writes them here with
// placeholders (LogPlaceholder, ConfigPlaceholder) where each OS names its
// default files, and checks that the page Page returns equals what ToMan
// renders for linux, darwin and windows. The binary only fills in the
// placeholders: the release build (-tags urfave_cli_no_docs) links neither
// Markdown renderer, whose package initialisation cost every start ≈ 0.5
// ms.
package manpage

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed dual-proxy.1 claude-dual-proxy.1
var pages embed.FS

// LogPlaceholder and ConfigPlaceholder stand for the launcher log's and the
// pool configuration's default files in the embedded pages.
const (
	LogPlaceholder    = "@@LOG_FILE@@"
	ConfigPlaceholder = "@@CONFIG_FILE@@"
)

// Template is the embedded page of program ("dual-proxy" or
// "claude-dual-proxy"), placeholders unfilled; an error for another name.
func Template(program string) (string, error) {
	page, err := pages.ReadFile(program + ".1")
	if err != nil {
		return "", err
	}
	return string(page), nil
}

// Page returns the man page of program ("" or "dual-proxy", or
// "claude-dual-proxy") naming logFile and configFile as the default files.
func Page(program, logFile, configFile string) (string, error) {
	switch program {
	case "":
		program = "dual-proxy"
	case "dual-proxy", "claude-dual-proxy":
	default:
		return "", fmt.Errorf("want dual-proxy or claude-dual-proxy, got %q", program)
	}
	page, err := Template(program)
	if err != nil {
		return "", err
	}
	return Fill(page, logFile, configFile), nil
}

// Fill puts the default files logFile and configFile into page's
// placeholders, as roff text (a backslash is roff's escape character:
// Windows paths get \\, as go-md2man writes them).
func Fill(page, logFile, configFile string) string {
	return strings.NewReplacer(LogPlaceholder, roffText(logFile), ConfigPlaceholder, roffText(configFile)).Replace(page)
}

// roffText escapes s for the middle of a roff text line.
func roffText(s string) string {
	return strings.ReplaceAll(s, `\`, `\\`)
}
