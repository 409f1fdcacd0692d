package redisstate

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/balance"
)

// Count implements balance.State.
func (s *Store) Count(ctx context.Context, pool, member string, success bool) {
	s.local.Count(ctx, pool, member, success)
	s.run(ctx, func(c context.Context) error {
		pipe := s.rdb.Pipeline()
		s.countCmds(c, pipe, pool, member, success)
		_, err := pipe.Exec(c)
		return err
	})
}

// countCmds queues Count's writes on pipe.
func (s *Store) countCmds(c context.Context, pipe redis.Pipeliner, pool, member string, success bool) {
	field := "f"
	if success {
		field = "s"
	}
	pipe.HIncrBy(c, s.outKey(pool, member), field, 1)
	pipe.PExpire(c, s.outKey(pool, member), keepFor)
}

// AddUsage implements balance.State.
func (s *Store) AddUsage(ctx context.Context, pool, session, member string, u neutral.Accounting, now time.Time) {
	s.local.AddUsage(ctx, pool, session, member, u, now)
	s.run(ctx, func(c context.Context) error {
		pipe := s.rdb.Pipeline()
		s.usageCmds(c, pipe, pool, session, member, u)
		_, err := pipe.Exec(c)
		return err
	})
}

// usageCmds queues AddUsage's writes on pipe.
func (s *Store) usageCmds(c context.Context, pipe redis.Pipeliner, pool, session, member string, u neutral.Accounting) {
	keys := []string{s.outKey(pool, member)}
	if session != "" {
		keys = append(keys, s.prefix+"s:"+pool+":"+session)
	}
	for _, k := range keys {
		pipe.HIncrBy(c, k, "in", u.Input)
		pipe.HIncrBy(c, k, "cr", u.CacheRead)
		pipe.HIncrBy(c, k, "cc", u.CacheCreation)
		pipe.PExpire(c, k, keepFor)
	}
}

// Record implements balance.State: the record names this instance and goes
// to the capped shared list.
func (s *Store) Record(ctx context.Context, r balance.CallRecord) {
	r = s.named(r)
	s.local.Record(ctx, r)
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	s.run(ctx, func(c context.Context) error {
		pipe := s.rdb.Pipeline()
		s.recordCmds(c, pipe, b)
		_, err := pipe.Exec(c)
		return err
	})
}

// named is r naming this instance unless it names one.
func (s *Store) named(r balance.CallRecord) balance.CallRecord {
	if r.Instance == "" {
		r.Instance = s.instance
	}
	return r
}

// recordCmds queues Record's writes of the encoded record b on pipe.
func (s *Store) recordCmds(c context.Context, pipe redis.Pipeliner, b []byte) {
	pipe.LPush(c, s.prefix+"recent", b)
	pipe.LTrim(c, s.prefix+"recent", 0, recentCalls-1)
	pipe.PExpire(c, s.prefix+"recent", keepFor)
}

// Recent implements balance.State.
func (s *Store) Recent(ctx context.Context) []balance.CallRecord {
	var out []balance.CallRecord
	ok := s.run(ctx, func(c context.Context) error {
		vals, err := s.rdb.LRange(c, s.prefix+"recent", 0, recentCalls-1).Result()
		out = make([]balance.CallRecord, 0, len(vals))
		for _, v := range vals {
			var r balance.CallRecord
			if json.Unmarshal([]byte(v), &r) == nil {
				out = append(out, r)
			}
		}
		slices.Reverse(out) // LPUSH keeps the newest first
		return err
	})
	if !ok {
		return s.local.Recent(ctx)
	}
	return out
}

// Counts implements balance.State.
func (s *Store) Counts(ctx context.Context, pool, member string) (successes, failures int64, cache balance.CacheStats) {
	ok := s.run(ctx, func(c context.Context) error {
		v, err := s.rdb.HGetAll(c, s.outKey(pool, member)).Result()
		n := func(f string) int64 { x, _ := strconv.ParseInt(v[f], 10, 64); return x }
		successes, failures = n("s"), n("f")
		cache = cacheStats(n("in"), n("cr"), n("cc"))
		return err
	})
	if !ok {
		return s.local.Counts(ctx, pool, member)
	}
	return successes, failures, cache
}

func cacheStats(in, cr, cc int64) balance.CacheStats {
	cs := balance.CacheStats{InputTokens: in, CacheReadTokens: cr, CacheCreationTokens: cc}
	if total := in + cr + cc; total > 0 {
		cs.HitRatio = float64(cr) / float64(total)
	}
	return cs
}

// SessionCache implements balance.State.
func (s *Store) SessionCache(ctx context.Context, pool, session string) (cs balance.CacheStats, found bool) {
	ok := s.run(ctx, func(c context.Context) error {
		v, err := s.rdb.HGetAll(c, s.prefix+"s:"+pool+":"+session).Result()
		n := func(f string) int64 { x, _ := strconv.ParseInt(v[f], 10, 64); return x }
		cs, found = cacheStats(n("in"), n("cr"), n("cc")), len(v) > 0
		return err
	})
	if !ok {
		return s.local.SessionCache(ctx, pool, session)
	}
	return cs, found
}
