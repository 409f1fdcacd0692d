//go:build redis && linux

package redisstate

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// roundTrips counts the round trips a go-redis client makes: one per
// command sent on its own, one per pipeline.
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(1); return next(ctx, cmds) }
}

// measureTimeout is the state deadline of the stores that count round
// trips or time them: a busy machine must not degrade a store mid-run
// (what is measured is Redis, not the local state).
const measureTimeout = 2 * time.Second

// countRoundTrips hooks a counter into st's client.
func countRoundTrips(st *Store) *roundTrips {
	h := &roundTrips{}
	st.rdb.AddHook(h)
	return h
}

// TestCallRoundTrips: a successful call costs at most two Redis round
// trips, one before its attempt and one after (SPEC POOL-23;
// docs/BENCHMARKS.md), for a new session and a bound one, in
// every strategy.
func TestCallRoundTrips(t *testing.T) {
	srv := startRedis(t, 0)
	for _, strategy := range []string{config.StrategySticky, config.StrategyRoundRobin, config.StrategyFailover} {
		t.Run("POOL-23/at-most-two-round-trips-per-call-"+strategy, func(t *testing.T) {
			tm := newTeamWith(t, srv.url(), "rt-"+strategy, 1, strategy, measureTimeout)
			h := countRoundTrips(tm.stores[0])
			tm.call(t, 0, "warm-up") // loads the scripts, opens the connection
			for _, tc := range []struct {
				name, session string
				stream        bool
				max           int64
			}{
				{"first call", "rt", false, 2}, {"bound session", "rt", false, 2}, {"new session", "rt-2", false, 2},
				{"bound session streamed", "rt", true, 2},
				// A stream on its own first pick writes no binding at the
				// commit point: concurrent calls of the session join the
				// pick (POOL-5); Finish records the binding.
				{"new session streamed", "rt-3", true, 2},
			} {
				before := h.n.Load()
				tm.send(t, 0, tc.session, tc.stream)
				if n := h.n.Load() - before; n < 1 || n > tc.max {
					t.Errorf("%s: %d round trips, want at most %d", tc.name, n, tc.max)
				}
			}
			if tm.stores[0].Health().Degraded {
				t.Fatal("store degraded: the counts above are of local state")
			}
		})
	}
}

// TestFinishAfterScriptFlush: a Redis that lost its script cache (a
// restart, SCRIPT FLUSH) still gets the release in Finish's pipeline, sent
// as the script itself, without degrading the store (SPEC POOL-23).
func TestFinishAfterScriptFlush(t *testing.T) {
	srv := startRedis(t, 0)
	t.Run("POOL-23/finish-resends-a-flushed-release-script", func(t *testing.T) {
		tm := newTeamWith(t, srv.url(), "flush", 2, config.StrategySticky, measureTimeout)
		tm.call(t, 0, "warm-up")
		c := srv.client()
		defer c.Close()
		if err := c.ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		m1, _ := tm.call(t, 0, "flushed")
		if m2, _ := tm.call(t, 1, "flushed"); m2 != m1 {
			t.Fatalf("binding lost after the flush: %s through instance 1, %s through instance 2", m1, m2)
		}
		for i, st := range tm.stores {
			if st.Health().Degraded {
				t.Fatalf("instance %d degraded after a script flush: %+v", i+1, st.Health())
			}
		}
	})
}
