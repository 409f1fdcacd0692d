//go:build !urfave_cli_no_docs

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/manpage"
)

// renderManPage renders program's man page from the command-line
// definitions with urfave/cli's ToMan (go-md2man), for the default files
// in logHint and configHint. TestManPages keeps manpage/*.1 (what the binary
// prints) equal to it.
func renderManPage(program string) (string, error) {
	var app *cli.App
	switch program {
	case "dual-proxy":
		app = dualProxyApp(IO{})
	case "claude-dual-proxy":
		app = claudeApp(IO{})
	default:
		return "", fmt.Errorf("want dual-proxy or claude-dual-proxy, got %q", program)
	}
	app.Description += "\n\n" + envSection(app.Flags)
	return app.ToManWithSection(1)
}

// withHints runs f with logHint and configHint set to log and config (the
// help texts and descriptions read them when the apps are built).
func withHints(log, config string, f func()) {
	oldLog, oldConfig := logHint, configHint
	logHint, configHint = log, config
	defer func() { logHint, configHint = oldLog, oldConfig }()
	f()
}

// TestManPagesRendered: the pages `dual-proxy man` prints are the ones
// urfave/cli renders from the definitions (SPEC OPS-1's files named per
// OS): manpage/*.1 are the rendering with placeholders, and filling them in
// gives the rendering with each OS's files. After changing a flag:
// go test ./internal/app/cli -run TestManPages -update (writes manpage/*.1 and
// docs/*.1; the embedded pages take effect at the next build).
func TestManPagesRendered(t *testing.T) {
	for _, prog := range []string{"dual-proxy", "claude-dual-proxy"} {
		t.Run("OPS-1/embedded-man-page-is-the-rendering/"+prog, func(t *testing.T) {
			var page string
			var err error
			withHints(manpage.LogPlaceholder, manpage.ConfigPlaceholder, func() { page, err = renderManPage(prog) })
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(page, manpage.LogPlaceholder) || !strings.Contains(page, manpage.ConfigPlaceholder) {
				t.Fatalf("the rendering has no placeholder:\n%.300s", page)
			}
			path := filepath.Join("manpage", prog+".1")
			if *updateDocs {
				if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := manpage.Template(prog)
			if err != nil || got != page {
				t.Fatalf("%s is stale: run `go test ./internal/app/cli -run TestManPages -update` (err %v)", path, err)
			}
		})
		for _, goos := range []string{"linux", "darwin", "windows"} {
			t.Run("OPS-1/filled-man-page-equals-rendering/"+prog+"/"+goos, func(t *testing.T) {
				log, config := pathHints(goos)
				var want string
				var err error
				withHints(log, config, func() { want, err = renderManPage(prog) })
				if err != nil {
					t.Fatal(err)
				}
				tmpl, err := manpage.Template(prog)
				if err != nil {
					t.Fatal(err)
				}
				if *updateDocs && goos == "linux" { // docs/*.1 show the Linux defaults (TestManPages)
					if err := os.WriteFile(filepath.Join("..", "..", "..", "docs", prog+".1"), []byte(want), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if got := manpage.Fill(tmpl, log, config); got != want {
					t.Fatalf("filled page differs from the rendering for %s:\n%s", goos, firstDiff(got, want))
				}
			})
		}
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got  %q\n want %q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}

// envSection lists each flag's environment variables (markdown, rendered
// into the man page's DESCRIPTION).
func envSection(flags []cli.Flag) string {
	var b strings.Builder
	b.WriteString("Environment variables (a flag on the command line wins):\n\n")
	for _, f := range flags {
		ev, ok := f.(interface{ GetEnvVars() []string })
		if !ok || len(ev.GetEnvVars()) == 0 {
			continue
		}
		fmt.Fprintf(&b, "- **%s**: --%s\n", strings.Join(ev.GetEnvVars(), ", "), f.Names()[0])
	}
	return b.String()
}
