// Package contrib holds the files that run dual-proxy all day on each OS,
// shipped in the release archives: the systemd user unit (dual-proxy.service, Linux), the
// launchd user agent (com.github.dual-proxy.plist, macOS) and the per-user logon task
// (dual-proxy-task.xml, Windows), plus the example pool configuration and the Grafana
// dashboard. The Go package exists for their tests, which render and parse them.
package contrib

import "embed"

// Files are the run-all-day files as shipped (placeholders HOME_DIR and USER_ID unreplaced).
//
//go:embed dual-proxy.service com.github.dual-proxy.plist dual-proxy-task.xml
var Files embed.FS
