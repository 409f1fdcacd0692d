// Package proxy is dual-proxy's local HTTP/1.1 forwarding proxy.
//
// Request flow on one client connection (serveConn):
//
//	read head (raw, httpmsg) ──► framing checks (RFC 9112 §6) ──► 400/501, close
//	   │
//	   ├─ CONNECT host:port ──► Engine.Open (proxy/engine) ──► open path (dial.Open)
//	   │                        ──► "200 Connection established" ──► relay (connect.go)
//	   ├─ GET http://host/… ──► buffer body ≤ 8 MiB ──► Engine.Forward: per candidate
//	   │                        own HTTP/1.1 client (proxy/upstream; replay rules)
//	   │                        ──► stream answer, flush per read (response.go)
//	   └─ GET /…  (origin-form) ──► Config.Handler via net/http (status, pool),
//	                            then back to the loop: keep-alive (handoff.go)
//
// Keep-alive for the proxy's own endpoints: net/http keeps
// a connection it is given for good, so it gets a view of the client
// connection (handoffConn) that the loop feeds one origin-form request at
// a time, taking the connection back when each answer is complete; the
// next request may be a proxy request or a CONNECT. Handlers keep all of
// net/http (why: handoff_conn.go).
//
// Shutdown stops accepting, lets in-flight work finish for a
// grace period, then closes every socket, hijacked tunnels included.
package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/lib/httpmsg"
	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
	"github.com/dual-proxy/dual-proxy/internal/lib/via"
	"github.com/dual-proxy/dual-proxy/proxy/dial"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// The selection engine's Go API, under the names it had before it was a
// package of its own (internal/app/cli, the launcher and Go users build
// servers from a Config and share an Engine).
type (
	// Config is the proxy's resolved configuration (engine.Config).
	Config = engine.Config
	// Engine is the candidate selection shared by servers, DialContext and
	// the RoundTrippers (engine.Engine).
	Engine = engine.Engine
)

// NewEngine is engine.New: it validates cfg, applies its defaults and
// returns an engine whose health loop runs until Close.
func NewEngine(cfg Config) (*Engine, error) { return engine.New(cfg) }

// errClientGone means the client closed the connection between requests
// or while its request was in flight (no answer is due, no cooldown).
var errClientGone = httpmsg.ErrClientGone

// idleTimeout closes a client connection that sends no new request for this
// long between requests (the first byte of the next head; the rest must
// follow within Config.HeadTimeout, head.go).
const idleTimeout = 5 * time.Minute

// Server is the forwarding proxy. Create it with New; serve with Serve; stop
// with Shutdown. It is safe for concurrent use.
type Server struct {
	engine     *Engine
	via        via.Pseudonym // engine.Via(), for the loop check of each head
	ownsEngine bool          // New made the engine: Shutdown closes it
	log        *slog.Logger

	handoff *chanListener // origin-form connections for the internal http.Server
	watches watchSweeper  // client-gone watches of plain requests (watch.go)
	httpSrv *http.Server

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	ports     atomic.Pointer[[]int]   // the TCP listeners' ports, replaced under mu (listensOn)
	conns     map[net.Conn]*connState // each client connection's own state
	nPending  atomic.Int64            // connections waiting for a complete head (head.go)
	victims   []pendingConn           // under mu: oldest-first pending heads of the last walk, about MaxPendingHeads at most (head.go)
	walks     int                     // under mu: walks of conns for victims (tests)
	epoch     time.Time               // connState.pendingSince is counted from here
	buffered  atomic.Int64            // request body bytes buffered right now (maxBuffered)
	closing   atomic.Bool             // stored under mu (Shutdown), read without it
	wg        sync.WaitGroup          // connections, connection goroutines and Serve loops
	done      chan struct{}           // closed by Shutdown
	baseCtx   context.Context         // cancelled by Shutdown; parent of upstream work
	viaCtx    context.Context         // baseCtx with our Via entry alone (dial.WithVia), made once
	cancel    context.CancelFunc

	jobs        chan connJob // unbuffered: accepted connections for waiting connection goroutines
	idleServers atomic.Int64 // connection goroutines waiting on jobs
	maxIdle     int64        // at most this many wait

	maxPending int64 // Config.MaxPendingHeads (head.go)
}

// New validates cfg and returns a Server. Errors name the offending field.
func New(cfg Config) (*Server, error) {
	eng, err := engine.New(cfg)
	if err != nil {
		return nil, err
	}
	s := newServer(eng.Config(), eng)
	s.ownsEngine = true
	return s, nil
}

// NewWithEngine returns a Server that routes through an existing engine
// (shared with a Dialer or RoundTripper, so they see one set of
// cooldowns and health). Shutdown does not
// close e; its owner does (Engine.Close).
func NewWithEngine(e *Engine) *Server { return newServer(e.Config(), e) }

func newServer(cfg Config, eng *Engine) *Server {
	s := &Server{
		engine:     eng,
		via:        eng.Via(),
		log:        cfg.Logger,
		handoff:    newChanListener(),
		listeners:  map[net.Listener]struct{}{},
		conns:      map[net.Conn]*connState{},
		epoch:      time.Now(),
		done:       make(chan struct{}),
		jobs:       make(chan connJob),
		maxIdle:    maxIdleServers(),
		maxPending: int64(cfg.MaxPendingHeads),
	}
	s.watches.done, s.watches.wg = s.done, &s.wg
	s.baseCtx, s.cancel = context.WithCancel(context.Background())
	s.viaCtx = dial.WithVia(s.baseCtx, s.via.Entry())
	eng.OnDecision(func(d statusdoc.Decision) {
		// One line per routing decision: host, candidate, kind, latency and
		// failovers — never paths or headers (they may carry secrets).
		// A request no candidate served is the caller's to report when
		// it has a Caller (the pool's "pool member failed" line, then its
		// failover): debug, not a second line that reads as an outage.
		level := slog.LevelDebug
		if len(d.Failed) > 0 && d.Candidate != "" || d.Candidate == "" && d.Caller == "" {
			level = slog.LevelInfo
		}
		if !cfg.Logger.Enabled(context.Background(), level) {
			return // no attribute slice built per request for a disabled level
		}
		// failovers counts moves to a next candidate: every failed
		// attempt of a served decision, all but the last of a failed one
		// (one candidate that failed is failed=1 failovers=0).
		failovers := len(d.Failed)
		if d.Candidate == "" && failovers > 0 {
			failovers--
		}
		attrs := []any{"host", d.Host, "kind", d.Kind, "candidate", d.Candidate, "latency_ms", d.LatencyMS, "failed", len(d.Failed), "failovers", failovers}
		if d.Error != "" { // a failover that ended in success has none
			attrs = append(attrs, "error", d.Error)
		}
		cfg.Logger.Log(context.Background(), level, "routed", attrs...)
	})
	h := cfg.Handler
	if h == nil {
		h = http.NotFoundHandler()
	}
	// No read timeouts: the proxy read the head itself (head.go) and
	// bounds body reads and waits between requests itself (handoffConn).
	s.httpSrv = &http.Server{
		Handler:     h,
		ConnState:   handoffState,
		ConnContext: handoffContext,
		ErrorLog:    slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.httpSrv.Serve(s.handoff)
	}()
	return s
}

// Engine returns the server's selection engine.
func (s *Server) Engine() *Engine { return s.engine }

// Serve accepts connections on ln until Shutdown; it returns nil after
// Shutdown and the accept error otherwise. ln is closed on return.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.listeners[ln] = struct{}{}
	s.addListenPort(ln)
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	defer ln.Close()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosing() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || netutil.IsLocalResource(err) {
				backoff = min(max(backoff*2, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; backing off", "reason", err, "backoff_ms", backoff.Milliseconds())
				select {
				case <-time.After(backoff):
				case <-s.done:
					return nil
				}
				continue
			}
			return err
		}
		backoff = 0
		cs := s.track(c)
		if cs == nil {
			c.Close()
			return nil
		}
		s.dispatch(c, cs)
	}
}

// Connection goroutines are reused (CPU per new tunnel). A
// goroutine that serves a CONNECT grows its stack twice, from 2 to 8 KiB,
// on the way through the head read and the dial (≈ 7 % of the proxy's CPU
// per new tunnel went to runtime.newstack); a fresh goroutine per
// connection paid that every time. When serveConn returns, its goroutine
// waits for the next accepted connection instead of exiting, so the next
// one starts on the grown stack. The tunnel itself still relays on two
// fresh goroutines with small stacks (relay.go), so an idle tunnel keeps
// its ≈ 4 KiB of stacks; only a bounded number of connection goroutines
// wait idle, and the garbage collector shrinks the stacks of those that
// wait long.

// connJob is an accepted, tracked connection handed to a waiting
// connection goroutine.
type connJob struct {
	c  net.Conn
	cs *connState
}

// maxIdleServers returns how many connection goroutines may wait for a
// next connection: about as many as a busy proxy on this machine has
// between accept and tunnel at once (8 at least; 4 per core).
func maxIdleServers() int64 { return int64(max(8, 4*runtime.GOMAXPROCS(0))) }

// dispatch serves c on a waiting connection goroutine, or on a new one
// when none waits. c is tracked (s.wg counts it), so the new goroutine's
// s.wg.Add cannot race Shutdown's Wait.
func (s *Server) dispatch(c net.Conn, cs *connState) {
	select {
	case s.jobs <- connJob{c: c, cs: cs}:
	default:
		s.wg.Add(1)
		go s.serveLoop(c, cs)
	}
}

// serveLoop serves c, then the connections dispatch hands it, until more
// than s.maxIdle goroutines would wait or the server shuts down.
func (s *Server) serveLoop(c net.Conn, cs *connState) {
	defer s.wg.Done()
	var oc openCtx
	for {
		s.serveConn(c, cs, &oc)
		c, cs = nil, nil // a waiting goroutine keeps no connection alive
		if s.idleServers.Add(1) > s.maxIdle {
			s.idleServers.Add(-1)
			return
		}
		select {
		case j := <-s.jobs:
			s.idleServers.Add(-1)
			c, cs = j.c, j.cs
		case <-s.done:
			s.idleServers.Add(-1)
			return
		}
	}
}

// track registers c and returns its state; nil when the server is shutting
// down.
func (s *Server) track(c net.Conn) *connState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return nil
	}
	cs := &connState{}
	s.conns[c] = cs
	s.wg.Add(1)
	return cs
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

func (s *Server) isClosing() bool { return s.closing.Load() }

// Shutdown stops accepting, closes idle client connections, waits for
// in-flight requests and tunnels until ctx ends, then force-closes every
// connection and waits for all goroutines (SPEC LIS-3: callers pass a 1.5 s
// deadline). It returns ctx.Err() when the grace period ran out, else nil.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closing.Load() {
		s.closing.Store(true)
		close(s.done)
		for ln := range s.listeners {
			ln.Close()
		}
		for c, cs := range s.conns {
			if cs.idle.Load() {
				c.Close()
			}
		}
	}
	s.mu.Unlock()
	s.handoff.Close()

	httpDone := make(chan error, 1)
	go func() { httpDone <- s.httpSrv.Shutdown(ctx) }()

	all := make(chan struct{})
	go func() {
		s.waitConns(ctx)
		close(all)
	}()
	var err error
	select {
	case <-all:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.cancel() // grace is over: abort upstream work still in flight
	s.mu.Lock()
	for c, cs := range s.conns {
		c.Close()
		cs.upMu.Lock()
		if cs.up != nil {
			cs.up.Close()
		}
		cs.upMu.Unlock()
	}
	s.mu.Unlock()
	<-all
	if herr := <-httpDone; herr != nil {
		s.httpSrv.Close()
	}
	if s.ownsEngine {
		s.engine.Close() // stops the health loop too: no goroutine outlives Shutdown
	} else {
		s.engine.CloseIdle()
	}
	s.wg.Wait()
	return err
}

// waitConns returns when no client connection is left or ctx ends.
func (s *Server) waitConns(ctx context.Context) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
