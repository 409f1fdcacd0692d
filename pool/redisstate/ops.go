package redisstate

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// recentCalls is how many calls the shared list keeps.
const recentCalls = 200

// statusTimeout multiplies the state deadline for Bindings, which scans
// every binding of the configuration for the status document.
const statusTimeout = 20

// Key names (all under the prefix): b:POOL:SESSIONKEY binding hash,
// n:POOL:MEMBER load sorted set, c:POOL cursor, cd:KEY cooldown hash,
// o:POOL:MEMBER counters, s:POOL:SESSIONHASH session cache totals, recent
// call list, own:STATEKEY Responses state owner.
func (s *Store) bindKey(pool, sk string) string { return s.prefix + "b:" + pool + ":" + sk }
func (s *Store) loadPrefix(pool string) string  { return s.prefix + "n:" + pool + ":" }
func (s *Store) cursorKey(pool string) string   { return s.prefix + "c:" + pool }
func (s *Store) cdKey(key string) string {
	return s.prefix + "cd:" + strings.ReplaceAll(key, "\x00", "|")
}
func (s *Store) outKey(pool, member string) string {
	return s.prefix + "o:" + pool + ":" + member
}
func (s *Store) ownKey(stateKey string) string { return s.prefix + "own:" + stateKey }

func ms(t time.Time) int64 { return t.UnixMilli() }

func listArgs(args []any, l []string) []any {
	args = append(args, len(l))
	for _, x := range l {
		args = append(args, x)
	}
	return args
}

// Acquire implements balance.State: one acquireScript (sticky) or
// rotateScript (round-robin) on Redis, else the local state.
func (s *Store) Acquire(ctx context.Context, p *config.PoolConfig, key balance.BindKey, eligible []string, hot func(string) bool, now time.Time) (member string, inFlight bool) {
	var cand []string
	for _, m := range eligible {
		if hot(m) {
			cand = append(cand, m)
		}
	}
	if len(cand) == 0 {
		cand = eligible // fail open
	}
	var ok bool
	switch p.Strategy {
	case config.StrategyFailover:
		return cand[0], false
	case config.StrategyRoundRobin:
		ok = s.run(ctx, func(c context.Context) error {
			i, err := rotateScript.Run(c, s.rdb, []string{s.cursorKey(p.ID)}, len(cand)).Int()
			if err == nil && i >= 0 && i < len(cand) {
				member = cand[i]
			}
			return err
		})
	default:
		sk := ""
		if key.Session != "" {
			sk = balance.SessionKey(key.Session)
		}
		args := []any{ms(now), p.SessionTTL.Milliseconds(), pickTTL.Milliseconds(), key.Model, sk, s.loadPrefix(p.ID)}
		args = listArgs(listArgs(listArgs(args, eligible), cand), p.Members)
		ok = s.run(ctx, func(c context.Context) error {
			res, err := acquireScript.Run(c, s.rdb, []string{s.bindKey(p.ID, sk), s.cursorKey(p.ID)}, args...).Slice()
			if err == nil && len(res) == 2 {
				member, _ = res[0].(string)
				n, _ := res[1].(int64)
				inFlight = n == 1
			}
			return err
		})
	}
	if !ok || member == "" {
		return s.local.Acquire(ctx, p, key, eligible, hot, now)
	}
	return member, inFlight
}

// Release implements balance.State (local state too, for an outage).
func (s *Store) Release(ctx context.Context, p *config.PoolConfig, key balance.BindKey, inFlight bool, success string, now time.Time) {
	s.local.Release(ctx, p, key, inFlight, success, now)
	s.release(ctx, p, key, inFlight, success, now)
}

// Bind implements balance.State (local state too).
func (s *Store) Bind(ctx context.Context, p *config.PoolConfig, key balance.BindKey, member string, now time.Time) {
	s.local.Bind(ctx, p, key, member, now)
	s.release(ctx, p, key, false, member, now)
}

func (s *Store) release(ctx context.Context, p *config.PoolConfig, key balance.BindKey, inFlight bool, success string, now time.Time) {
	keys, args, ok := s.releaseCall(p, key, inFlight, success, now)
	if !ok {
		return
	}
	s.run(ctx, func(c context.Context) error { return releaseScript.Run(c, s.rdb, keys, args...).Err() })
}

// releaseCall is releaseScript's keys and arguments, ok false when there is
// nothing to release (not sticky, or no session).
func (s *Store) releaseCall(p *config.PoolConfig, key balance.BindKey, inFlight bool, success string, now time.Time) (keys []string, args []any, ok bool) {
	if p.Strategy != config.StrategySticky || key.Session == "" {
		return nil, nil, false
	}
	sk := balance.SessionKey(key.Session)
	fl := "0"
	if inFlight {
		fl = "1"
	}
	return []string{s.bindKey(p.ID, sk)}, []any{ms(now), p.SessionTTL.Milliseconds(),
		pickTTL.Milliseconds(), key.Model, sk, s.loadPrefix(p.ID), success, fl}, true
}

// Bindings implements balance.State: every live binding of cfg's pools in
// Redis (one SCAN of the binding hashes), else the local ones.
func (s *Store) Bindings(ctx context.Context, cfg *config.Config, now time.Time) []balance.Binding {
	var out []balance.Binding
	ok := s.runFor(ctx, statusTimeout*s.timeout, func(c context.Context) error {
		out = out[:0]
		var keys []string
		iter := s.rdb.Scan(c, 0, s.prefix+"b:*", 1000).Iterator()
		for iter.Next(c) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return err
		}
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.MapStringStringCmd, len(keys))
		for i, k := range keys {
			cmds[i] = pipe.HGetAll(c, k)
		}
		if _, err := pipe.Exec(c); err != nil && err != redis.Nil {
			return err
		}
		for i, k := range keys {
			rest := strings.TrimPrefix(k, s.prefix+"b:")
			cut := strings.LastIndexByte(rest, ':')
			if cut < 0 || len(rest)-cut-1 < 12 {
				continue
			}
			pool, sk := rest[:cut], rest[cut+1:]
			pc := cfg.Pool(pool)
			if pc == nil {
				continue
			}
			for f, v := range cmds[i].Val() {
				model, isBinding := strings.CutPrefix(f, "m:")
				member, used, okv := splitValue(v)
				if !isBinding || !okv || now.Sub(used) >= pc.SessionTTL {
					continue
				}
				out = append(out, balance.Binding{Key: balance.BindKey{Pool: pool, Model: model}, Session: sk[:12], Member: member, LastUsed: used})
			}
		}
		return nil
	})
	if !ok {
		return s.local.Bindings(ctx, cfg, now)
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Key.Pool != y.Key.Pool {
			return x.Key.Pool < y.Key.Pool
		}
		if x.Session != y.Session {
			return x.Session < y.Session
		}
		return x.Key.Model < y.Key.Model
	})
	return out
}

// splitValue reads "member|ms".
func splitValue(v string) (string, time.Time, bool) {
	i := strings.LastIndexByte(v, '|')
	if i < 0 {
		return "", time.Time{}, false
	}
	n, err := strconv.ParseInt(v[i+1:], 10, 64)
	return v[:i], time.UnixMilli(n), err == nil
}

// Fail implements balance.State: failScript on Redis (its deadline is the
// answer), the local cooldown too.
func (s *Store) Fail(ctx context.Context, key, class string, base, explicit time.Duration, now time.Time) time.Time {
	until := s.local.Fail(ctx, key, class, base, explicit, now)
	s.run(ctx, func(c context.Context) error {
		u, err := failScript.Run(c, s.rdb, []string{s.cdKey(key)}, ms(now), class, base.Milliseconds(), explicit.Milliseconds()).Int64()
		if err == nil {
			until = time.Time{}
			if u > 0 {
				until = time.UnixMilli(u)
			}
		}
		return err
	})
	return until
}

// Succeed implements balance.State.
func (s *Store) Succeed(ctx context.Context, key string) {
	s.local.Succeed(ctx, key)
	s.run(ctx, func(c context.Context) error { return s.rdb.Del(c, s.cdKey(key)).Err() })
}

// Cooldowns implements balance.State: one pipelined read of every key.
func (s *Store) Cooldowns(ctx context.Context, keys []string, now time.Time) map[string]balance.Cooldown {
	out := map[string]balance.Cooldown{}
	ok := s.run(ctx, func(c context.Context) error {
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.SliceCmd, len(keys))
		for i, k := range keys {
			cmds[i] = pipe.HMGet(c, s.cdKey(k), "u", "c", "s")
		}
		if _, err := pipe.Exec(c); err != nil && err != redis.Nil {
			return err
		}
		for i, k := range keys {
			if cd, cooling := parseCooldown(cmds[i].Val(), now); cooling {
				out[k] = cd
			}
		}
		return nil
	})
	if !ok {
		return s.local.Cooldowns(ctx, keys, now)
	}
	return out
}

// parseCooldown reads a cooldown hash's u, c and s fields (as HMGET
// answers them) and reports whether it is running at now.
func parseCooldown(v []any, now time.Time) (balance.Cooldown, bool) {
	if len(v) < 3 {
		return balance.Cooldown{}, false
	}
	us, _ := v[0].(string)
	u, err := strconv.ParseInt(us, 10, 64)
	if err != nil || !now.Before(time.UnixMilli(u)) {
		return balance.Cooldown{}, false
	}
	cd := balance.Cooldown{Until: time.UnixMilli(u)}
	cd.Class, _ = v[1].(string)
	if ss, _ := v[2].(string); ss != "" {
		if since, err := strconv.ParseInt(ss, 10, 64); err == nil {
			cd.Since = time.UnixMilli(since)
		}
	}
	return cd, true
}

// RecordOwner implements balance.State.
func (s *Store) RecordOwner(ctx context.Context, member string, keys []string) {
	s.local.RecordOwner(ctx, member, keys)
	s.run(ctx, func(c context.Context) error {
		pipe := s.rdb.Pipeline()
		s.ownerCmds(c, pipe, member, keys)
		_, err := pipe.Exec(c)
		return err
	})
}

// ownerCmds queues RecordOwner's writes on pipe.
func (s *Store) ownerCmds(c context.Context, pipe redis.Pipeliner, member string, keys []string) {
	for _, k := range keys {
		pipe.Set(c, s.ownKey(k), member, keepFor)
	}
}

// OwnerOf implements balance.State.
func (s *Store) OwnerOf(ctx context.Context, key string) string {
	owner := ""
	if !s.run(ctx, func(c context.Context) error {
		var err error
		owner, err = s.rdb.Get(c, s.ownKey(key)).Result()
		return err
	}) {
		return s.local.OwnerOf(ctx, key)
	}
	return owner
}

// OwnersOf implements balance.State: one MGET.
func (s *Store) OwnersOf(ctx context.Context, keys []string) map[string]string {
	out := make(map[string]string, len(keys))
	if len(keys) == 0 {
		return out
	}
	rkeys := make([]string, len(keys))
	for i, k := range keys {
		rkeys[i] = s.ownKey(k)
	}
	if !s.run(ctx, func(c context.Context) error {
		vals, err := s.rdb.MGet(c, rkeys...).Result()
		for i, v := range vals {
			if m, _ := v.(string); m != "" && i < len(keys) {
				out[keys[i]] = m
			}
		}
		return err
	}) {
		return s.local.OwnersOf(ctx, keys)
	}
	return out
}

// Retain implements balance.State: the local state drops what cfg no
// longer has; Redis keeps its keys (a binding to a member no longer
// eligible is reassigned on use, and every key expires).
func (s *Store) Retain(ctx context.Context, cfg *config.Config) {
	s.cfg.Store(cfg)
	s.local.Retain(ctx, cfg)
}

// merge writes the outage's local state back (see the package doc):
// bindings used since since where Redis has none, running cooldowns with
// the longest deadline winning.
func (s *Store) merge(since time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*s.timeout)
	defer cancel()
	now := s.now()
	cfg := s.cfg.Load()
	pipe := s.rdb.Pipeline()
	for _, b := range s.local.Bindings(ctx, cfg, now) {
		pc := cfg.Pool(b.Key.Pool)
		if pc == nil || b.LastUsed.Before(since) {
			continue
		}
		sk := balance.SessionKey(b.Key.Session)
		mergeBindingScript.Eval(ctx, pipe, []string{s.bindKey(pc.ID, sk)}, ms(now), pc.SessionTTL.Milliseconds(),
			b.Key.Model, sk, s.loadPrefix(pc.ID), b.Member, ms(b.LastUsed))
	}
	for _, c := range s.local.LiveCooldowns(now) {
		mergeCooldownScript.Eval(ctx, pipe, []string{s.cdKey(c.Key)}, ms(now), ms(c.Until), c.Class, c.Last.Milliseconds())
	}
	_, err := pipe.Exec(ctx)
	return err
}
