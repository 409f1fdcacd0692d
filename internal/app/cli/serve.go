package cli

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/hint"
	"github.com/dual-proxy/dual-proxy/internal/app/metrics"
	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/internal/lib/netutil"
	"github.com/dual-proxy/dual-proxy/launcher"
	"github.com/dual-proxy/dual-proxy/pool"
	"github.com/dual-proxy/dual-proxy/proxy"
)

// serve runs the standalone proxy until SIGINT/SIGTERM (SPEC LIS-3): its
// listener, its server, its model pool, then the signal loop.
func serve(c *cli.Context, sio IO) error {
	if c.Args().Len() > 0 {
		return cli.Exit(hint.UnknownCommand(c.Args().Slice(), c.App.Commands), 2)
	}
	s, err := resolve(c, modeServe, sio.Environ)
	if err != nil {
		return err
	}
	if c.Bool(fPrintConfig) {
		return s.Print(c.App.Writer)
	}
	log := newLogger(s, sio.Stderr)
	host, wantPort, fallback := s.listener()
	warnOpenProxy(host, log)
	warnReadableKeys(s, log)
	ln, port, err := proxy.Listen(host, wantPort, fallback, s.AvoidPorts()...)
	if err != nil {
		hint := ""
		if netutil.IsAddrInUse(err) {
			hint = busyHint(s.Env, host, wantPort, fallback)
		}
		return cli.Exit("dual-proxy: "+err.Error()+hint, 1)
	}
	srv, mux, met, candidates, err := newServer(s, ln, port, log)
	if err != nil {
		return err
	}
	f := newConfigFile(s, log)
	if _, err := startLive(s, f, srv, mux, met, port, log); err != nil {
		ln.Close()
		return cli.Exit("dual-proxy: settings: "+err.Error(), 2)
	}
	if s.Pool != nil {
		p := servePool(s, f, srv, mux, met, log)
		defer p.Close()
	} else {
		mux.Handle("/pool/", noPool)
	}
	return serveUntilSignal(s, ln, srv, f, candidates, log)
}

// newServer is the proxy of s for the bound port with the status
// endpoints and metrics on its mux, and its number of candidates; on an
// error it closes ln and returns the exit (2: a bad configuration, 1: the
// server could not be built).
func newServer(s *Settings, ln net.Listener, port int, log *slog.Logger) (*proxy.Server, *proxy.Mux, *metrics.Metrics, int, error) {
	pcfg, warnings, err := s.ProxyConfig(port, log)
	if err != nil {
		ln.Close()
		return nil, nil, nil, 0, cli.Exit("dual-proxy: "+err.Error(), 2)
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	mux := proxy.NewMux()
	pcfg.Handler = mux
	srv, err := proxy.New(pcfg)
	if err != nil {
		ln.Close()
		return nil, nil, nil, 0, cli.Exit("dual-proxy: "+err.Error(), 1)
	}
	mux.Attach(srv)
	return srv, mux, mountMetrics(mux, srv), len(pcfg.Candidates), nil
}

// servePool serves the model pool of s on /pool/ of mux and logs what it
// loaded, and, without --pool-token, that any local user can call it (SPEC
// POOL-20).
func servePool(s *Settings, f *configFile, srv *proxy.Server, mux *proxy.Mux, met *metrics.Metrics, log *slog.Logger) *pool.Pool {
	p := newPool(s, f, pool.Options{Transport: srv.Engine().PoolRoundTripper(), Logger: log, Token: s.PoolToken, Observer: met.PoolObserver()}, log)
	met.AttachPool(func() *pool.Pool { return p })
	mux.Handle("/pool/", p)
	empty := true
	if s.ConfigMissing {
		log.Info("no pool configuration yet: create it on the pool page's editor (/pool/#token=…)", "config", s.ConfigPath)
	} else if empty = warnEmptyConfig(s.ConfigPath, s.Pool, log); !empty {
		log.Info("model pool loaded", "config", s.ConfigPath)
	}
	switch {
	case s.PoolToken != "":
	case empty:
		// Nothing to spend yet, but a reload (SIGHUP) may add pools
		// (the warning must not read as if pools were open now).
		log.Warn("pool endpoints have no token: pools a reload adds to the config will be callable by any local user with their channel keys; set --pool-token or "+envPoolToken, "config", s.ConfigPath)
	default:
		log.Warn("pool endpoints have no token: any local user can call the pools with their channel keys; set --pool-token or " + envPoolToken)
	}
	return p
}

// serveUntilSignal registers the instance (with its control token, so
// `dual-proxy settings` finds it), serves ln until SIGINT or SIGTERM, reloading the config file f
// on SIGHUP and when the file changes (watch), then shuts down within
// launcher.ShutdownGrace.
func serveUntilSignal(s *Settings, ln net.Listener, srv *proxy.Server, f *configFile, candidates int, log *slog.Logger) error {
	// Signal handling is in place before "listening" is logged, so a
	// supervisor that signals as soon as it sees the line is handled.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reg := register(s, "dual-proxy", ln.Addr().(*net.TCPAddr).Port, s.PoolToken, log)
	defer reg.Remove()
	storeControlToken(reg, s.ControlToken, log)
	log.Info("listening", "addr", ln.Addr().String(), "candidates", candidates, "health", healthTarget(s.Live.String(settings.HealthURL)))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	defer f.startWatch(watchEvery)()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-hup:
			_ = f.reload("SIGHUP", false) // a refusal is logged and shown by f
		case err := <-done:
			return cli.Exit("dual-proxy: serve: "+err.Error(), 1)
		}
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), launcher.ShutdownGrace)
	defer cancel()
	srv.Shutdown(sctx)
	<-done
	return nil
}
