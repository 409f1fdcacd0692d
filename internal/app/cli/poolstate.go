package cli

import (
	"context"
	"encoding/json"
	"io"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/statusview"
	"github.com/dual-proxy/dual-proxy/internal/app/settings"
)

// printPoolState fetches /pool/status from the proxy at addr and writes
// its pools' verdicts, members and shared state (statusview.PoolState).
// A proxy without a pool prints nothing. refused reports whether it wrote
// that the config file's last reload was refused (the pool's state says it
// first, as statusview.PoolState does), for printFileErrors.
func printPoolState(ctx context.Context, w io.Writer, addr string) (refused bool) {
	raw, err := fetchDoc(ctx, addr, "/pool/status")
	if err != nil {
		return false
	}
	var doc statusview.PoolDoc
	if json.Unmarshal(raw, &doc) != nil {
		return false
	}
	statusview.PoolState(w, &doc)
	return len(doc.Config.ReloadErrors) > 0
}

// printFileErrors fetches the settings document from the proxy at addr
// and, when the last reload of its config file was refused, writes that
// (statusview.FileNotReloaded) unless said: printPoolState wrote it
// already (its answer, not another look at /pool/status: a caller that
// printed no pool state, for an instance whose registry entry lists no
// pool, must still say it). A file of proxy: settings only has no pool to
// say it, and a user who edited it must learn where they look that the old
// settings still run (SPEC OPS-7). A proxy that answers no settings
// document prints nothing.
func printFileErrors(ctx context.Context, w io.Writer, addr string, said bool) {
	if said {
		return
	}
	raw, err := fetchDoc(ctx, addr, settings.Path)
	if err != nil {
		return
	}
	var doc settings.Document
	if json.Unmarshal(raw, &doc) != nil {
		return
	}
	statusview.FileNotReloaded(w, doc.Config, doc.FileErrors)
}
