package editor

import _ "embed"

// Section is the editor's part of the /pool/ page: its own
// markup, style and script, self-contained (no external resources; the
// page's CSP allows inline script and style and fetches to its own origin
// only). The status page adds it before </body> when a configuration file
// can be edited. It talks to the API of this package and to POST
// /pool/{pool}/test, with the token from the page's #token=
// fragment.
//
//go:embed section.html
var Section []byte
