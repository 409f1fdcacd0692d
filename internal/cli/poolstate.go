package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// poolStateDoc is the "state" part of /pool/status (balance.Health).
type poolStateDoc struct {
	State struct {
		Kind     string     `json:"kind"`
		Store    string     `json:"store"`
		Instance string     `json:"instance"`
		Degraded bool       `json:"degraded"`
		Since    *time.Time `json:"degraded_since"`
		Reason   string     `json:"reason"`
	} `json:"state"`
}

// printPoolState writes where the pool of the proxy at addr keeps its state
// when it is shared (SPEC POOL-23), and loudly when the shared store is
// unreachable and the instance runs on local state. The store address
// comes redacted from the pool. A proxy without a pool prints nothing.
func printPoolState(ctx context.Context, w io.Writer, addr string) {
	raw, err := fetchDoc(ctx, addr, "/pool/status")
	if err != nil {
		return
	}
	var doc poolStateDoc
	if json.Unmarshal(raw, &doc) != nil || doc.State.Kind == "" || doc.State.Kind == "memory" {
		return
	}
	st := doc.State
	if !st.Degraded {
		fmt.Fprintf(w, "pool state: shared on %s %s (this instance: %s)\n", st.Kind, st.Store, st.Instance)
		return
	}
	since := "?"
	if st.Since != nil {
		since = st.Since.Local().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "pool state: DEGRADED since %s: %s %s unreachable (%s); this instance balances on its local state until it is back\n",
		since, st.Kind, st.Store, st.Reason)
}
