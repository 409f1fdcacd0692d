package pool_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// ownerLookups is the memory State, counting the owner lookups the pool
// makes (each is a round trip on a shared state, SPEC POOL-23).
type ownerLookups struct {
	balance.State
	n atomic.Int64
}

func (s *ownerLookups) OwnerOf(ctx context.Context, key string) string {
	s.n.Add(1)
	return s.State.OwnerOf(ctx, key)
}

func (s *ownerLookups) OwnersOf(ctx context.Context, keys []string) map[string]string {
	s.n.Add(1)
	return s.State.OwnersOf(ctx, keys)
}

// TestEncryptedOwnerLookups: a Codex call resending its whole history with
// encrypted reasoning looks up the items' owners once, not once per item
// (SPEC POOL-18 on a shared state, POOL-23), and still strips what another
// member produced.
func TestEncryptedOwnerLookups(t *testing.T) {
	t.Run("POOL-18/one-owner-lookup-per-call-for-all-reasoning-items", func(t *testing.T) {
		a := newRespChannel("a")
		st := &ownerLookups{State: balance.NewMemory()}
		w := newRWorld(t, rconf{api: config.APIOpenAI, opts: pool.Options{State: st}}, []string{"a"}, a.handle)
		var history []string
		for turn := 0; turn < 5; turn++ {
			history = append(history, userItem(fmt.Sprint("turn ", turn)))
			if turn == 4 {
				history = append(history, reasoningItem("enc-b-1")) // another member's (recorded below)
				st.RecordOwner(context.Background(), "b", []string{reasoningKey("enc-b-1")})
			}
			body := `{"model":"m","stream":true,"store":false,"include":["reasoning.encrypted_content"],"input":[` + strings.Join(history, ",") + `]}`
			before := st.n.Load()
			resp, got := w.do("/pool/p/v1/responses", "codex-lookups", body)
			if resp.StatusCode != 200 || !strings.Contains(got, "hi from a") {
				t.Fatalf("turn %d: status %d: %s", turn, resp.StatusCode, got)
			}
			if n := st.n.Load() - before; turn > 0 && n != 1 {
				t.Fatalf("turn %d with %d reasoning items: %d owner lookups, want 1", turn, turn, n)
			}
			enc, ok := encOf(got)
			if !ok {
				t.Fatalf("no encrypted reasoning in %s", got)
			}
			history = append(history, reasoningItem(enc), assistantItem("hi from a"))
		}
		last := string(w.ch["a"].req(w.ch["a"].calls() - 1).Raw)
		if strings.Contains(last, "enc-b-1") || strings.Count(last, `"encrypted_content"`) != 4 {
			t.Fatalf("last body kept b's item or lost a's: %s", last)
		}
	})
}

// reasoningKey is the state key of an encrypted content (wire's encKey:
// "e:" and 16 bytes of its SHA-256, hex).
func reasoningKey(enc string) string {
	h := sha256.Sum256([]byte(enc))
	return "e:" + hex.EncodeToString(h[:16])
}
