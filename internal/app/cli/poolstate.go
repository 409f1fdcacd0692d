package cli

import (
	"context"
	"encoding/json"
	"io"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/statusview"
)

// printPoolState fetches /pool/status from the proxy at addr and writes
// its pools' verdicts, members and shared state (statusview.PoolState,
// SPEC POOL-13, POOL-23). A proxy without a pool prints nothing.
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
