// Package launcher runs a command behind an in-process dual-proxy: bind the
// listener with port fallback, start the proxy, start the child with its proxy
// environment rewritten, forward the terminal and signals (package signals),
// and tear the proxy down when the child exits.
package launcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/dual-proxy/dual-proxy/envrewrite"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/signals"
)

// ShutdownGrace is how long in-flight requests and tunnels may finish after
// the child exits before every socket is closed.
const ShutdownGrace = 1500 * time.Millisecond

// Config describes one launch.
type Config struct {
	// ListenHost, ListenPort and PortFallback bind the proxy.
	ListenHost   string
	ListenPort   int
	PortFallback int
	// AvoidPorts are never taken as fallback ports (loopback gateways'
	// ports, see proxy.Listen).
	AvoidPorts []int
	// Proxy builds the proxy configuration once the port is bound (the
	// candidate list excludes the bound port). It returns the
	// config and warnings to log.
	Proxy func(boundPort int) (proxy.Config, []string, error)
	// Command is the child's argv; Command[0] is looked up in PATH.
	Command []string
	// Env is the parent environment the child's is derived from.
	Env []string
	// KillAfter is the stop timeout after a forwarded SIGTERM/SIGHUP.
	KillAfter time.Duration
	// Stdin, Stdout, Stderr are the launcher's stdio (os.Stdin … in cmd/).
	Stdin, Stdout, Stderr *os.File
	// Logger receives the launcher's logs; it must not write to the
	// child's terminal. nil discards.
	Logger *slog.Logger
	// Ready, when set, is called with the running server and the bound
	// port before the child starts (the demo, pool mode and tests use it).
	Ready func(s *proxy.Server, port int)
	// Prepare, when set, rewrites the child's environment (already
	// pointed at the proxy) and argv once the port is bound (pool mode).
	Prepare func(port int, env, argv []string) ([]string, []string)
	// KeepSignalHandlers leaves the signal handlers installed after the child
	// exited (signals.Options.KeepHandlers), for a program that exits when
	// Run returns: the launchers' teardown then skips removing them and is
	// not cut short by a late Ctrl-C.
	KeepSignalHandlers bool
}

// Run launches cfg.Command behind the proxy and returns the exit status the
// launcher should exit with (SPEC RUN-3). When the proxy cannot start, the
// child is not started and err is non-nil (SPEC RUN-2); status is then 1.
func Run(ctx context.Context, cfg Config) (status int, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Command) == 0 {
		return 2, errors.New("no command to run")
	}
	ln, port, err := proxy.Listen(cfg.ListenHost, cfg.ListenPort, cfg.PortFallback, cfg.AvoidPorts...)
	if err != nil {
		return 1, err
	}
	pcfg, warnings, err := cfg.Proxy(port)
	if err != nil {
		ln.Close()
		return 1, err
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	srv, err := proxy.New(pcfg)
	if err != nil {
		ln.Close()
		return 1, err
	}
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(ln) }()
	log.Info("proxy listening", "addr", ln.Addr().String(), "port_fallback_used", port != cfg.ListenPort,
		"candidates", len(pcfg.Candidates), "health", healthTarget(pcfg.HealthURL))
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
		defer cancel()
		srv.Shutdown(sctx)
		<-serveDone
		log.Info("proxy stopped", "port", port)
	}()
	if cfg.Ready != nil {
		cfg.Ready(srv, port)
	}

	proxyURL := "http://" + net.JoinHostPort(childHost(cfg.ListenHost), strconv.Itoa(port))
	env, notes := envrewrite.Rewrite(cfg.Env, proxyURL)
	for _, n := range notes {
		log.Info(n)
	}
	argv := cfg.Command
	if cfg.Prepare != nil {
		env, argv = cfg.Prepare(port, env, append([]string(nil), argv...))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	status, err = signals.Run(ctx, cmd, signals.Options{
		KillAfter:    cfg.KillAfter,
		Stdin:        cfg.Stdin,
		Stdout:       cfg.Stdout,
		Stderr:       cfg.Stderr,
		Logger:       log,
		KeepHandlers: cfg.KeepSignalHandlers,
	})
	if err != nil {
		log.Error("child failed", "reason", err.Error(), "status", status)
		return status, fmt.Errorf("%s: %w", cfg.Command[0], err)
	}
	log.Info("child exited", "status", status)
	return status, nil
}

// childHost is the address the child should use to reach the proxy: the
// listen host, or loopback when listening on every address.
func childHost(listen string) string {
	switch listen {
	case "", "0.0.0.0", "::", "[::]":
		return "127.0.0.1"
	}
	return listen
}

// healthTarget is what the "proxy listening" line says the health check
// contacts, as the standalone proxy's "listening" line does: the URL's
// origin (no path or query in logs), or "off".
func healthTarget(u *url.URL) string {
	if u == nil || u.Host == "" {
		return "off"
	}
	return u.Scheme + "://" + u.Host
}
