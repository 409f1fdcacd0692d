package redisstate

import (
	"context"
	"encoding/json"

	"github.com/redis/go-redis/v9"

	"github.com/dual-proxy/dual-proxy/pool/balance"
)

// A call's state costs two round trips on Redis (docs/BENCHMARKS.md): Begin is
// one beginScript before the first attempt, Finish one pipeline of every write
// once the call is over.

// Begin implements balance.State: one beginScript on Redis reads the
// cooldowns, picks the start member and reads the state owner in one round
// trip; else the local state answers.
func (s *Store) Begin(ctx context.Context, b balance.CallStart) balance.CallStarted {
	sk := ""
	if b.Key.Session != "" {
		sk = balance.SessionKey(b.Key.Session)
	}
	owner := ""
	if b.Owner != "" {
		owner = s.ownKey(b.Owner)
	}
	cdKeys := b.CooldownKeys()
	keys := append(make([]string, 0, 3+len(cdKeys)), s.bindKey(b.Pool.ID, sk), s.cursorKey(b.Pool.ID), owner)
	for _, k := range cdKeys {
		keys = append(keys, s.cdKey(k))
	}
	args := []any{ms(b.Now), b.Pool.SessionTTL.Milliseconds(), pickTTL.Milliseconds(), b.Key.Model, sk, s.loadPrefix(b.Pool.ID), b.Pool.Strategy}
	args = listArgs(listArgs(args, b.Eligible), b.Pool.Members)
	var out balance.CallStarted
	ok := s.run(ctx, func(c context.Context) error {
		res, err := beginScript.Run(c, s.rdb, keys, args...).Slice()
		if err != nil || len(res) != 3+3*len(cdKeys) {
			return err // a short answer leaves Member "": local state
		}
		out.Member, _ = res[0].(string)
		n, _ := res[1].(int64)
		out.InFlight = n == 1
		out.Owner, _ = res[2].(string)
		out.Cooldowns = make(map[string]balance.Cooldown)
		for i, k := range cdKeys {
			if cd, cooling := parseCooldown(res[3+3*i:], b.Now); cooling {
				out.Cooldowns[k] = cd
			}
		}
		return nil
	})
	if !ok || out.Member == "" {
		return s.local.Begin(ctx, b)
	}
	return out
}

// Finish implements balance.State: the local state takes every write (for
// an outage), Redis all of them in one pipeline (one round trip).
func (s *Store) Finish(ctx context.Context, e balance.CallEnd) {
	var rec []byte
	if e.Record != nil {
		r := s.named(*e.Record)
		e.Record = &r
		rec, _ = json.Marshal(r) // a CallRecord always encodes
	}
	s.local.Finish(ctx, e)
	s.run(ctx, func(c context.Context) error {
		pipe := s.rdb.Pipeline()
		if e.Served != "" {
			if e.Succeeded {
				pipe.Del(c, s.cdKey(e.Served))
				s.countCmds(c, pipe, e.Pool.ID, e.Served, true)
			}
			s.usageCmds(c, pipe, e.Pool.ID, e.Session, e.Served, e.Usage)
			s.ownerCmds(c, pipe, e.Served, e.Owned)
		}
		if rec != nil {
			s.recordCmds(c, pipe, rec)
		}
		var rel *redis.Cmd
		relKeys, relArgs, release := s.releaseCall(e.Pool, e.Key, e.InFlight, e.Served, e.Now)
		if release {
			rel = releaseScript.EvalSha(c, pipe, relKeys, relArgs...)
		}
		cmds, err := pipe.Exec(c)
		if rel == nil || !redis.HasErrorPrefix(rel.Err(), "NOSCRIPT") {
			return err
		}
		// Redis lost its script cache (a restart): send the script itself.
		for _, cmd := range cmds {
			if cmd != rel && cmd.Err() != nil && cmd.Err() != redis.Nil {
				return cmd.Err()
			}
		}
		return releaseScript.Eval(c, s.rdb, relKeys, relArgs...).Err()
	})
}
