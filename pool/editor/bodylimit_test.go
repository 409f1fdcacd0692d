package editor_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/editor"
)

// TestEditedDocumentOverTheLimitIs413: a save, a validation, a gather or
// a rename whose body is over editor.MaxDocument is answered 413 Content
// Too Large (RFC 9110 §15.5.14) naming the limit, and the file is left as
// it is (SPEC POOL-22).
func TestEditedDocumentOverTheLimitIs413(t *testing.T) {
	w := newWorld(t, commented, 0o600)
	g := w.get()
	big := "# " + strings.Repeat("x", editor.MaxDocument) + "\n" + commented
	for _, tc := range []struct{ name, method, path string }{
		{"POOL-22/save-over-1-MiB-is-413", "PUT", editor.PathConfig},
		{"POOL-22/validate-over-1-MiB-is-413", "POST", editor.PathValidate},
		{"POOL-22/gather-over-1-MiB-is-413", "POST", editor.PathModels + "?members=a"},
		{"POOL-22/rename-over-1-MiB-is-413", "POST", editor.PathRename},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _, body := w.do(tc.method, tc.path, big, map[string]string{"If-Match": `"` + g.Version + `"`})
			var out struct {
				Error  string
				Errors []struct{ Message string }
			}
			_ = json.Unmarshal([]byte(body), &out)
			if st != 413 || !strings.Contains(out.Error, "1 MiB (1048576 bytes)") || len(out.Errors) != 1 || out.Errors[0].Message != out.Error {
				t.Fatalf("%d %.300s", st, body)
			}
			if w.file() != commented {
				t.Fatal("the file changed")
			}
		})
	}
}
