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
// A proxy without a pool prints nothing.
func printPoolState(ctx context.Context, w io.Writer, addr string) {
	raw, err := fetchDoc(ctx, addr, "/pool/status")
	if err != nil {
		return
	}
	var doc statusview.PoolDoc
	if json.Unmarshal(raw, &doc) != nil {
		return
	}
	statusview.PoolState(w, &doc)
}

// printFileErrors fetches the settings document from the proxy at addr
// and, when the last reload of its config file was refused, writes that
// (statusview.FileNotReloaded) unless the pool's state already said it: a
// file of proxy: settings only has no pool to say it, and a user who edited
// it must learn where they look that the old settings still run.
// A proxy that answers no settings document prints nothing.
func printFileErrors(ctx context.Context, w io.Writer, addr string) {
	raw, err := fetchDoc(ctx, addr, settings.Path)
	if err != nil {
		return
	}
	var doc settings.Document
	if json.Unmarshal(raw, &doc) != nil || len(doc.FileErrors) == 0 {
		return
	}
	if raw, err := fetchDoc(ctx, addr, "/pool/status"); err == nil {
		var pd statusview.PoolDoc
		if json.Unmarshal(raw, &pd) == nil && len(pd.Config.ReloadErrors) > 0 {
			return // printPoolState wrote them
		}
	}
	statusview.FileNotReloaded(w, doc.Config, doc.FileErrors)
}
