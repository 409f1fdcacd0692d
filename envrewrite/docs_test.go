package envrewrite

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsExportBothSpellings: a shell snippet in the README or the
// operations guide that exports a proxy variable exports both spellings of
// it, as the launcher sets them (SPEC ENV-1): curl ignores HTTP_PROXY for
// http:// URLs (it reads only http_proxy there, against the CGI
// HTTP_PROXY header injection), so a snippet with the upper-case name alone
// made plain requests skip the proxy without a word.
func TestDocsExportBothSpellings(t *testing.T) {
	exportRE := regexp.MustCompile(`(?m)^export (.*)$`)
	nameRE := regexp.MustCompile(`(?:^|\s)([A-Za-z_]+)=`)
	for _, doc := range []string{"README.md", filepath.Join("docs", "operations.md")} {
		t.Run("ENV-1/standalone-snippet-exports-both-spellings/"+filepath.ToSlash(doc), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", doc))
			if err != nil {
				t.Fatal(err)
			}
			set := map[string]bool{}
			for _, m := range exportRE.FindAllStringSubmatch(string(data), -1) {
				for _, n := range nameRE.FindAllStringSubmatch(m[1], -1) {
					set[n[1]] = true
				}
			}
			found := 0
			for _, v := range []string{"http_proxy", "https_proxy", "no_proxy"} {
				up, low := set[strings.ToUpper(v)], set[v]
				if up || low {
					found++
				}
				if up != low {
					t.Errorf("%s exports only one spelling of %s (upper case %v, lower case %v)", doc, v, up, low)
				}
			}
			if found == 0 {
				t.Fatalf("%s has no export line of a proxy variable: the snippet moved?", doc)
			}
		})
	}
}
