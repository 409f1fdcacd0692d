// Package redisstate is the pool's shared State on Redis (or Valkey), SPEC
// Several dual-proxy instances with the same pools keep one set of
// sticky bindings, bound-session counts, cooldowns, counters and recent
// calls, so they balance as one pool.
//
// What is atomic across instances runs as one Lua script (scripts.go):
// assign-if-unbound with the least-bound choice (acquire), release and bind,
// and cool-down-with-growth where the longest deadline wins (fail). Every
// key starts with the configuration's prefix (config.StatePrefix), carries a
// TTL, and holds no prompt, no key and no raw session id (sessions are named
// by balance.SessionKey).
//
// A call costs two round trips (call.go): Begin, one script before the
// first attempt, and Finish, one pipeline of every write after the last.
//
// Redis is never on a call's critical path for long: every operation has a
// short deadline (config.DefaultStateTimeout). Every write is also applied
// to a local balance.Memory; when Redis fails, the Store logs once, marks
// itself degraded (Health) and answers from that local state until a
// background ping (at most one every RetryEvery) finds Redis back. It then
// merges what happened meanwhile: bindings made or used during the outage
// are written where Redis has none for the key (first writer wins, like
// SETNX), running local cooldowns are merged with the longest deadline
// winning; counters and recent calls of the outage stay local.
package redisstate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// RetryEvery is how often a degraded Store pings Redis to see whether it is
// back.
const RetryEvery = time.Second

// pickTTL bounds a first pick in flight whose instance died before
// releasing it.
const pickTTL = 10 * time.Minute

// keepFor is the TTL of counters, session cache totals, recent calls and
// Responses state owners.
const keepFor = 24 * time.Hour

// Options configure a Store.
type Options struct {
	// URL is redis://[user:pass@]host:port[/db] or rediss://… (TLS).
	URL string
	// Prefix namespaces every key (config.StatePrefix).
	Prefix string
	// Timeout bounds every state call; 0 → config.DefaultStateTimeout.
	Timeout time.Duration
	// Instance names this process in the recent calls and Health (e.g.
	// host:pid).
	Instance string
	// Logger gets the degraded/back transitions (once each); nil → slog.Default().
	Logger *slog.Logger
	// Config is the pool configuration (session TTLs for the merge).
	Config *config.Config
	// Now is the pool's clock (pool.Options.Now), which stamps bindings
	// and cooldowns; the outage's start is read from it too. nil → time.Now.
	Now func() time.Time
}

// quiet is go-redis's logger: its own lines (dial errors on every call
// while Redis is down) would repeat what the Store logs once.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

// Store is the Redis State. Create it with New; Close it when done.
type Store struct {
	rdb      *redis.Client
	local    *balance.Memory
	prefix   string
	timeout  time.Duration
	instance string
	addr     string // redacted, for Health
	password string // scrubbed from error texts
	log      *slog.Logger
	now      func() time.Time
	cfg      atomic.Pointer[config.Config]

	mu        sync.Mutex
	down      bool
	since     time.Time
	reason    string
	probing   bool
	lastProbe time.Time
	closed    bool
	wg        sync.WaitGroup
}

var _ balance.State = (*Store)(nil)

// CheckURL reports whether the Redis client accepts raw (a redis:// or
// rediss:// URL); the error shows the URL with its password hidden.
func CheckURL(raw string) error {
	if _, err := redis.ParseURL(raw); err != nil {
		return fmt.Errorf("%s: %s", config.RedactStateURL(raw), scrub(err.Error(), passwordOf(raw)))
	}
	return nil
}

// New returns a Store on the Redis at o.URL. It fails only for a URL that
// does not parse; an unreachable Redis makes it start degraded (Health),
// never fail.
func New(o Options) (*Store, error) {
	quietOnce.Do(func() { redis.SetLogger(quiet{}) })
	ro, err := redis.ParseURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("pool state: %s: %s", config.RedactStateURL(o.URL), scrub(err.Error(), passwordOf(o.URL)))
	}
	if o.Timeout <= 0 {
		o.Timeout = config.DefaultStateTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout, ro.PoolTimeout = o.Timeout, o.Timeout, o.Timeout, o.Timeout
	ro.ContextTimeoutEnabled = true
	ro.MaxRetries = -1 // a retry would outlast the deadline; local state answers instead
	ro.DialerRetries = 1
	ro.DisableIdentity = true
	ro.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	s := &Store{rdb: redis.NewClient(ro), local: balance.NewMemory(), prefix: o.Prefix, timeout: o.Timeout,
		instance: o.Instance, addr: config.RedactStateURL(o.URL), password: ro.Password,
		log: o.Logger.With("component", "pool-state"), now: o.Now}
	if o.Config == nil {
		o.Config = &config.Config{}
	}
	s.cfg.Store(o.Config)
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		s.markDown(err)
	}
	return s, nil
}

// Close stops the background ping and closes the connections.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wg.Wait()
	return s.rdb.Close()
}

// Health implements balance.State.
func (s *Store) Health() balance.Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := balance.Health{Kind: "redis", Store: s.addr, Instance: s.instance, Degraded: s.down}
	if s.down {
		since := s.since
		h.Since, h.Reason = &since, s.reason
	}
	return h
}

// up reports whether Redis is to be used; while degraded it starts a
// background ping at most once per RetryEvery.
func (s *Store) up() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.down {
		return true
	}
	if !s.probing && !s.closed && time.Since(s.lastProbe) >= RetryEvery {
		s.probing, s.lastProbe = true, time.Now()
		s.wg.Add(1)
		go s.probe()
	}
	return false
}

// run does op on Redis within the deadline and reports whether it did; a
// failure not caused by the caller's own context degrades the Store.
func (s *Store) run(ctx context.Context, op func(ctx context.Context) error) bool {
	return s.runFor(ctx, s.timeout, op)
}

// runFor is run with deadline d (listing every binding for the status page
// takes longer than one call's operation, and is on no call's path).
func (s *Store) runFor(ctx context.Context, d time.Duration, op func(ctx context.Context) error) bool {
	if !s.up() {
		return false
	}
	c, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err := op(c)
	if err == nil || errors.Is(err, redis.Nil) {
		return true
	}
	if ctx.Err() == nil {
		s.markDown(err)
	}
	return false
}

// markDown degrades the Store; only the first failure is logged.
func (s *Store) markDown(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reason = scrub(err.Error(), s.password)
	if s.down {
		return
	}
	s.down, s.since, s.lastProbe = true, s.now(), time.Now()
	s.log.Warn("shared pool state unreachable: going on with local state", "store", s.addr, "reason", s.reason)
}

// probe pings Redis; when it answers, merges the outage's local state back
// and ends the degraded mode.
func (s *Store) probe() {
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	err := s.rdb.Ping(ctx).Err()
	cancel()
	if err == nil {
		s.mu.Lock()
		since := s.since
		s.mu.Unlock()
		err = s.merge(since)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probing = false
	if err != nil {
		s.reason = scrub(err.Error(), s.password)
		return
	}
	s.log.Info("shared pool state reachable again: local state merged", "store", s.addr, "degraded_for", s.now().Sub(s.since).Round(time.Millisecond).String())
	s.down, s.reason = false, ""
}

// passwordOf returns the password in a URL, or "" (for scrubbing errors).
func passwordOf(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return ""
	}
	userinfo := rest[:at]
	_, pw, _ := strings.Cut(userinfo, ":")
	return pw
}

// scrub hides the password in an error text.
func scrub(text, password string) string {
	if len(password) >= 3 {
		text = strings.ReplaceAll(text, password, "***")
	}
	return text
}
