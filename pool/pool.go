package pool

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/via"
	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
	"github.com/dual-proxy/dual-proxy/pool/balance"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/pool/editor"
	"github.com/dual-proxy/dual-proxy/pool/status"
)

// DefaultPingInterval is how long a committed stream may stay quiet before
// the pool sends its own keepalive event (at least every 30 s).
const DefaultPingInterval = 15 * time.Second

// MaxRequestBody is the largest client request body the pool accepts
// (bytes); larger bodies are answered 413.
const MaxRequestBody = 32 << 20

// Options are the pool's collaborators. The zero value works: upstream calls
// use http.DefaultTransport, time.Now, slog.Default and no token.
type Options struct {
	// Transport carries every upstream call (the proxy's selection engine,
	// internal/app/cli passes proxy.Engine.PoolRoundTripper());
	// nil → http.DefaultTransport. Redirects are not followed. It must not
	// bound the wait for a response itself: the pool's own timeouts govern
	// each call through its request context, and it should
	// keep connections alive without ever resending a request once a byte
	// of it was written.
	Transport http.RoundTripper
	// Now is the clock (bindings, cooldowns, records); nil → time.Now.
	// Timeouts (first output, pings) use real timers regardless.
	Now func() time.Time
	// Logger receives pool, member, class, status and phase — never paths,
	// headers, bodies, prompts or keys. nil → slog.Default().
	Logger *slog.Logger
	// Token, when non-empty, must be presented as x-api-key or Authorization:
	// Bearer on every /pool/{pool}/… request, else 401. /pool/status stays open: it
	// holds no secrets.
	Token string
	// PingInterval: a committed stream quiet this long gets our own ping
	// event; 0 → DefaultPingInterval.
	PingInterval time.Duration
	// State holds bindings, cooldowns, counters and recent calls; nil → a
	// fresh balance.NewMemory(). A shared State
	// (redisstate.Store) lets several instances balance as
	// one. Close closes it.
	State balance.State
	// Observer, when set, is told about every finished call (metrics).
	Observer Observer
	// BodyBudget bounds the request-body bytes all calls hold for failover
	// replay (budget.go); a call whose body does not fit is
	// sent to one member only. 0 → DefaultBodyBudget; negative: no bound.
	BodyBudget int64
	// ConfigFile, when set, is the configuration file GET/PUT /pool/config
	// and the page's editor edit (package editor); "" → no
	// editor (404).
	ConfigFile string
	// Getenv resolves api_key_env when the editor validates a document, as
	// the reload does; nil → no variable is set.
	Getenv func(string) string
	// Reload re-reads ConfigFile and applies it in place, as SIGHUP does
	// (internal/app/cli's reload); the editor calls it after a save, with
	// FileLock held. nil → the pool loads ConfigFile with Getenv itself
	// and calls Reload.
	Reload func() error
	// FileLock is ConfigFile's lock, shared with its other readers and writers (the
	// proxy's live settings, SIGHUP, the file watch): the editor holds it from
	// reading the file to applying a save (editor.Options.Lock). nil → the editor's
	// own saves only.
	FileLock sync.Locker
	// CheckFile refuses, at the editor's validate and save, what a reload
	// would refuse beyond the pool's sections (editor.Options.Check);
	// called with FileLock held. nil → none.
	CheckFile func(data []byte) error
}

// Observer receives the pool's events; either hook may be nil. They run on
// the call's goroutine and must be quick (counter updates).
type Observer struct {
	// Call is told about every finished call: the record the status keeps
	// (pool, member, failovers, time to first byte, class).
	Call func(balance.CallRecord)
	// Usage is told about the token usage a member reported for a call.
	Usage func(pool, member string, u neutral.Accounting)
	// Resend is told about each member request sent once more after a
	// kept-alive connection closed unanswered; it may run
	// on another goroutine than the call's.
	Resend func(pool, member string)
}

// Pool serves the model pools of one configuration (config.Config). Create it
// with New; it is an http.Handler for origin-form paths /pool/{pool}/v1/…
// and /pool/status. Safe for concurrent use.
type Pool struct {
	opts Options
	log  *slog.Logger
	// state is everything remembered between calls (bindings, cooldowns,
	// counters, recent calls, who holds a Responses state); nothing else
	// here outlives a call.
	state balance.State
	// bodies is the replay budget for request bodies.
	bodies *bodyBudget

	// editor serves /pool/config… when Options.ConfigFile is set.
	editor *editor.Editor
	// via names this instance in the Via entry of its member requests: a
	// member whose base_url leads back to this pool (its own listener, or
	// another instance whose pool points here) would turn one call into an
	// unbounded chain of nested calls, each holding a connection and a
	// goroutine until the outermost timeout; a call arriving with this
	// entry is answered 508 in the client API's error shape, which the
	// calling pool treats as the member's server failure and
	// fails over from.
	via via.Pseudonym
	// lists are the members' own model lists, for /v1/models of a pool
	// without models: (memberlists.go).
	lists memberLists

	mu    sync.RWMutex
	cfg   *config.Config
	scrub config.Scrubber
	// conf is the reload state Status reports (under mu).
	conf status.ConfigState
}

// New returns a pool serving cfg. State (bindings, cooldowns, recent calls)
// is opts.State, by default empty and in memory.
func New(cfg *config.Config, opts Options) *Pool {
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = DefaultPingInterval
	}
	if opts.State == nil {
		opts.State = balance.NewMemory()
	}
	if opts.BodyBudget == 0 {
		opts.BodyBudget = DefaultBodyBudget
	} else if opts.BodyBudget < 0 {
		opts.BodyBudget = 1 << 62
	}
	if cfg == nil {
		cfg = &config.Config{}
	}
	p := &Pool{opts: opts, log: opts.Logger.With("component", "pool"), state: opts.State, bodies: &bodyBudget{limit: opts.BodyBudget},
		cfg: cfg, scrub: config.NewScrubber(cfg), via: via.New("dual-proxy-pool-")}
	p.conf = status.ConfigState{File: opts.ConfigFile, LoadedAt: opts.Now()}
	if opts.ConfigFile != "" {
		apply := opts.Reload
		if apply == nil {
			apply = func() error {
				cfg, err := config.LoadConfig(opts.ConfigFile, opts.Getenv)
				if err != nil {
					return err
				}
				p.Reload(cfg)
				p.log.Info("pool configuration reloaded", "config", opts.ConfigFile, "pools", len(cfg.Pools), "channels", len(cfg.Channels))
				return nil
			}
		}
		ro := ""
		if opts.Token == "" {
			ro = noTokenEditor
		}
		p.editor = editor.New(editor.Options{Path: opts.ConfigFile, Getenv: opts.Getenv, Apply: apply, Transport: opts.Transport, ReadOnly: ro, Lock: opts.FileLock, Check: opts.CheckFile})
	}
	return p
}

// Reload switches to cfg (SIGHUP, SPEC POOL-16). Bindings whose pool and
// member still exist are kept; cooldowns of channels that still exist are
// kept; calls in flight finish on the configuration they started with.
// The caller logs the reload (internal/app/cli's, once for the whole file).
func (p *Pool) Reload(cfg *config.Config) {
	if cfg == nil {
		cfg = &config.Config{}
	}
	p.mu.Lock()
	p.cfg, p.scrub = cfg, config.NewScrubber(cfg)
	p.conf = status.ConfigState{File: p.opts.ConfigFile, LoadedAt: p.opts.Now()}
	p.mu.Unlock()
	p.state.Retain(context.Background(), cfg)
}

// ReloadFailed records that re-reading the configuration file failed with err
// (SIGHUP or the editor's apply; the running configuration stays): Status
// reports each of its errors until the next Reload.
func (p *Pool) ReloadFailed(err error) {
	var errs []string
	for _, e := range config.AllErrors(err) {
		errs = append(errs, e.Error())
	}
	if len(errs) == 0 && err != nil {
		errs = []string{err.Error()}
	}
	at := p.opts.Now()
	p.mu.Lock()
	p.conf.ReloadErrors, p.conf.ReloadFailedAt = errs, &at
	p.mu.Unlock()
}

// Close closes the pool's State (a shared store's connections). The pool
// must not serve afterwards.
func (p *Pool) Close() error {
	if c, ok := p.state.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

func (p *Pool) config() (*config.Config, config.Scrubber) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.cfg, p.scrub
}

// API returns the flavour a pool serves ("anthropic" or "openai") and
// whether the pool exists; the launcher picks ANTHROPIC_BASE_URL or
// OPENAI_BASE_URL from it.
func (p *Pool) API(pool string) (string, bool) {
	cfg, _ := p.config()
	pc := cfg.Pool(pool)
	if pc == nil {
		return "", false
	}
	return pc.API, true
}

// poolConfig returns the configuration of pool id, or nil.
func (p *Pool) poolConfig(id string) *config.PoolConfig {
	cfg, _ := p.config()
	return cfg.Pool(id)
}

// ServeHTTP answers GET /pool/status (the status.StatusJSON document), GET
// /pool/ (the status page, status.ServePage), POST /pool/{pool}/test?model=M
// (probe.go) and /pool/{pool}/v1/… (the pool's API, SPEC POOL-1). Unknown
// pools get 404; a missing or wrong token 401 on every
// /pool/{pool}/… path; errors are in the pool's API shape (Anthropic or
// OpenAI), the Anthropic shape when no pool is named. Browser requests are
// refused with 403 before anything else (guard.go): a Host that is not an IP
// literal or localhost on every path; a foreign Origin or a cross-site
// Sec-Fetch-Site on /pool/{pool}/….
func (p *Pool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	keyed := r.URL.Path != "/pool" && r.URL.Path != "/pool/" && r.URL.Path != "/pool/status" && r.URL.Path != "/pool/status/"
	if why := browserRefusal(r, keyed); why != "" {
		fl := api.For(apikind.Anthropic)
		if rest, ok := strings.CutPrefix(r.URL.Path, "/pool/"); ok {
			poolID, sub, _ := strings.Cut(rest, "/")
			poolAPI := ""
			if pc := p.poolConfig(poolID); pc != nil {
				poolAPI = pc.API
			}
			fl, _, _ = clientFlavour(r, sub, poolAPI)
		}
		api.WriteError(w, fl, http.StatusForbidden, why, nil)
		return
	}
	switch r.URL.Path {
	case "/pool/status", "/pool/status/":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			api.WriteError(w, api.For(apikind.Anthropic), http.StatusMethodNotAllowed, "use GET", nil)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(p.Status())
		return
	case "/pool", "/pool/":
		p.mu.RLock()
		conf := p.conf
		p.mu.RUnlock()
		status.ServePage(w, r, p.editor != nil, conf)
		return
	case editor.PathConfig, editor.PathValidate, editor.PathModels, editor.PathRename:
		p.serveEditor(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/pool/")
	if !ok {
		api.WriteError(w, api.For(apikind.Anthropic), http.StatusNotFound, "not a pool path", nil)
		return
	}
	poolID, sub, _ := strings.Cut(rest, "/")
	cfg, scrub := p.config()
	pc := cfg.Pool(poolID)
	poolAPI := ""
	if pc != nil {
		poolAPI = pc.API
	}
	fl, ep, routed := clientFlavour(r, sub, poolAPI)
	if p.opts.Token != "" && !tokenOK(r, p.opts.Token) {
		api.WriteError(w, fl, http.StatusUnauthorized, tokenHelp("x-api-key, Authorization: Bearer, x-goog-api-key or key="), nil)
		return
	}
	if pc == nil {
		api.WriteError(w, fl, http.StatusNotFound, fmt.Sprintf("no pool %q (pools: %s)", poolID, strings.Join(cfg.PoolIDs(), ", ")), nil)
		return
	}
	if sub == "test" {
		p.serveTest(w, r, testFlavour(pc), poolID)
		return
	}
	if !routed {
		api.WriteError(w, fl, http.StatusNotFound, fmt.Sprintf("pool %q has no %s /%s", poolID, r.Method, sub), nil)
		return
	}
	if ep.Kind == neutral.EpModels {
		p.serveModels(w, r, cfg, pc, fl)
		return
	}
	if ep.Stream && fl.Name() == config.APIGemini && r.URL.Query().Get("alt") != "sse" {
		// Without alt=sse Gemini streams one JSON array; the pool streams
		// Server-Sent Events only, so it says so instead of answering in a
		// framing the client did not ask for.
		api.WriteError(w, fl, http.StatusBadRequest, "streamGenerateContent needs ?alt=sse: the pool streams Server-Sent Events, not a JSON array", nil)
		return
	}
	p.serveCall(w, r, cfg, scrub, pc, fl, ep)
}

// tokenHelp is the 401 message of a pool call without the instance's token:
// where the token goes (how) and where a user finds it, so a hand-made call or
// an agent started outside the launcher can recover.
func tokenHelp(how string) string {
	return "missing or wrong pool token (" + how + "): a launcher's child has it in its environment " +
		"(ANTHROPIC_AUTH_TOKEN, OPENAI_API_KEY, GEMINI_API_KEY); `dual-proxy status --show-token` prints it in the pool page link"
}

// noTokenEditor is why an instance without a pool token refuses the
// editor's saves and gathers: its 403, and the editor's read_only reason.
const noTokenEditor = "saving and gathering models need a pool token: start with --pool-token (or DUAL_PROXY_POOL_TOKEN) and open /pool/#token=TOKEN"

// serveEditor hands /pool/config… to the editor (SPEC POOL-22) once the
// token is checked (the browser guard has run): 404 without a ConfigFile.
// Without a pool token only GET and validate are served: a save or a
// gather decides where the channel keys are sent, and on a shared machine
// any local user can reach the listener.
func (p *Pool) serveEditor(w http.ResponseWriter, r *http.Request) {
	if p.opts.Token != "" && !tokenOK(r, p.opts.Token) {
		api.WriteError(w, api.For(apikind.Anthropic), http.StatusUnauthorized, tokenHelp("x-api-key or Authorization: Bearer"), nil)
		return
	}
	readOnly := r.Method == http.MethodGet || r.Method == http.MethodHead || r.URL.Path == editor.PathValidate
	if p.opts.Token == "" && !readOnly {
		api.WriteError(w, api.For(apikind.Anthropic), http.StatusForbidden, noTokenEditor, nil)
		return
	}
	if p.editor == nil {
		api.WriteError(w, api.For(apikind.Anthropic), http.StatusNotFound, "no configuration file to edit (start with --config FILE)", nil)
		return
	}
	p.editor.ServeHTTP(w, r)
}

// serveCall reads and checks a model call's body (size, duplicate keys,
// the flavour's parse, the pool's model list) and runs the call.
func (p *Pool) serveCall(w http.ResponseWriter, r *http.Request, cfg *config.Config, scrub config.Scrubber, pc *config.PoolConfig, fl api.Flavour, ep neutral.Endpoint) {
	if p.via.Looped(r.Header.Values("Via")) {
		api.WriteError(w, fl, http.StatusLoopDetected, "pool loop: this call already went through this pool (a member's base_url leads back to it)", nil)
		return
	}
	body, err := wirefmt.ReadBodySized(r.Body, r.ContentLength, MaxRequestBody)
	if err == wirefmt.ErrBodyTooLarge {
		api.WriteError(w, fl, http.StatusRequestEntityTooLarge, "request body above 32 MiB", nil)
		return
	}
	if err != nil {
		return // client went away while sending
	}
	if err := wirefmt.CheckTopLevel(body); err != nil {
		api.WriteError(w, fl, http.StatusBadRequest, err.Error(), nil)
		return
	}
	ci, err := fl.ParseRequest(ep, body)
	if err == nil {
		err = checkModelID(ci.Model)
	}
	if err != nil {
		api.WriteError(w, fl, http.StatusBadRequest, err.Error(), nil)
		return
	}
	var um *config.UnifiedModel
	if len(pc.Models) > 0 {
		if um = pc.Model(ci.Model); um == nil {
			api.WriteError(w, fl, http.StatusNotFound, fmt.Sprintf("model %q is not offered by pool %q (models: %s)", ci.Model, pc.ID, strings.Join(pc.ModelIDs(), ", ")), nil)
			return
		}
	}
	c := &call{p: p, cfg: cfg, scrub: scrub, pc: pc, fl: fl, ep: ep, ci: ci, um: um, r: r, startClock: p.opts.Now(),
		client: clientStream{w: w, flavour: fl, scrub: scrub, start: time.Now(), keepAlive: keepAlive{every: p.opts.PingInterval}}}
	if ci.Stream {
		c.client.hold = pc.KeepaliveHold // 0 turns the keep-alives off
	}
	c.probe, _ = r.Context().Value(probeKey{}).(*probe)
	if n := int64(len(body)); p.bodies.take(n) {
		defer p.bodies.give(n)
	} else {
		c.oneMember = true // over the budget: sent once, not kept for replay
	}
	c.run()
}

// checkModelID refuses a client's model id that cannot be sent unchanged
// as a model (SPEC POOL-1): "." and "..", which a member's URL would read
// as path steps (Gemini names the model in the path), and ids holding
// control characters, which no API's model names contain. The error names
// the model field.
func checkModelID(id string) error {
	if id == "." || id == ".." {
		return fmt.Errorf("model: %q is not a model id (a path step)", id)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("model: %q is not a model id (control character)", id)
		}
	}
	return nil
}

// tokenOK checks the pool token in x-api-key or Authorization: Bearer, in
// constant time (SPEC POOL-20). The auth scheme is case-insensitive
// (RFC 9110 §11.1: "bearer", "BEARER").
func tokenOK(r *http.Request, token string) bool {
	h := r.Header
	bearer := ""
	if scheme, cred, ok := strings.Cut(strings.TrimSpace(h.Get("Authorization")), " "); ok && strings.EqualFold(scheme, "Bearer") {
		bearer = strings.TrimSpace(cred)
	}
	// Gemini clients send x-goog-api-key or ?key=.
	for _, v := range []string{h.Get("X-Api-Key"), bearer, h.Get("X-Goog-Api-Key"), r.URL.Query().Get("key")} {
		if v != "" && subtle.ConstantTimeCompare([]byte(v), []byte(token)) == 1 {
			return true
		}
	}
	return false
}

// Status returns the current status document (SPEC POOL-13; status.Build):
// pools and members, sessions and the last 200 calls. It contains no
// prompt, key or raw session id.
func (p *Pool) Status() status.StatusJSON {
	cfg, _ := p.config()
	doc := status.Build(context.Background(), cfg, p.state, p.opts.Now())
	doc.TokenRequired = p.opts.Token != ""
	p.mu.RLock()
	doc.Config = p.conf
	p.mu.RUnlock()
	return doc
}
