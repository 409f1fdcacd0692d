package cli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/envrewrite"
	"github.com/dual-proxy/dual-proxy/internal/app/cli/statusview"
	"github.com/dual-proxy/dual-proxy/internal/app/metrics"
	"github.com/dual-proxy/dual-proxy/internal/app/registry"
	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/pool/config"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// Running instances (SPEC OPS-6): every proxy and launcher registers in the
// user's registry directory, so `dual-proxy status` and `dual-proxy pool
// test` find them without --addr or --token.

// defaultStandalone is where `dual-proxy` listens by default; status
// and pool test also look there (standaloneAddr), for an instance the
// registry does not list (started before the registry existed, or as a
// service with another runtime directory).
const defaultStandalone = "127.0.0.1:7898"

// registryDir is the registry directory for the environment env.
func registryDir(env []string) string {
	return registry.HostDir(func(k string) string { v, _ := envrewrite.Get(env, k); return v })
}

// register records this instance; a failure is logged, never fatal (the
// proxy works without it).
func register(s *Settings, program string, port int, token string, log *slog.Logger) *registry.Registration {
	e := registry.Entry{
		Program: program,
		Addr:    net.JoinHostPort(reachableHost(s.Live.String(settings.ListenHost)), strconv.Itoa(port)),
		Pool:    s.PoolName,
		LogFile: s.LogFile,
	}
	if len(s.Command) > 0 {
		e.Command = s.Command[0]
	}
	e.Pools = poolIDs(s.Pool)
	dir := registryDir(s.Env)
	r, err := registry.Register(dir, e, token)
	if err != nil {
		log.Warn("not registered: dual-proxy status will not list this instance", "reason", err.Error())
		return nil
	}
	s.registration.Store(r)
	log.Debug("registered", "dir", dir)
	return r
}

// poolIDs are the ids of cfg's pools in file order (nil: none).
func poolIDs(cfg *config.Config) []string {
	if cfg == nil {
		return nil
	}
	var ids []string
	for _, pc := range cfg.Pools {
		ids = append(ids, pc.ID)
	}
	return ids
}

// registerPools writes the pools of cfg, just applied, into this
// instance's registry entry: a pool added through the editor
// or SIGHUP is one `dual-proxy pool test` finds. A failure is logged,
// never fatal.
func registerPools(s *Settings, cfg *config.Config, log *slog.Logger) {
	if err := s.registration.Load().SetPools(poolIDs(cfg)); err != nil {
		log.Warn("registry entry not updated: dual-proxy pool test may not find the pools", "reason", err.Error())
	}
}

// reachableHost is the host a local client dials for a listener on host:
// loopback for the wildcard addresses.
func reachableHost(host string) string {
	switch h := strings.Trim(host, "[]"); h {
	case "", "0.0.0.0", "::":
		return "127.0.0.1"
	default:
		return h
	}
}

// instances are the registered live instances, plus the default standalone
// address when no registered instance listens there.
func instances(env []string) []registry.Entry {
	es, _ := registry.List(registryDir(env))
	for _, e := range es {
		if e.Addr == standaloneAddr {
			return es
		}
	}
	return append(es, registry.Entry{Program: "dual-proxy", Addr: standaloneAddr})
}

// instanceByAddr is the registered instance listening on addr, if any.
func instanceByAddr(env []string, addr string) (registry.Entry, bool) {
	es, _ := registry.List(registryDir(env))
	for _, e := range es {
		if e.Addr == addr {
			return e, true
		}
	}
	return registry.Entry{}, false
}

// instanceLine is the one-line description of e above its status.
func instanceLine(e registry.Entry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "== %s on %s", e.Program, e.Addr)
	if e.PID != 0 {
		fmt.Fprintf(&b, ", pid %d", e.PID)
	}
	if e.Command != "" {
		fmt.Fprintf(&b, ", running %s", e.Command)
	}
	if e.Pool != "" {
		fmt.Fprintf(&b, ", pool %s", e.Pool)
	}
	if e.LogFile != "" {
		fmt.Fprintf(&b, ", log %s", e.LogFile)
	}
	return b.String()
}

// statusAll prints every instance found: a line naming it, the pool page
// link (printPoolLink), then its status. Instances that do not answer are skipped, unless none
// answers: then it is an error naming where it looked.
func statusAll(c *cli.Context, env []string, nDecisions int) error {
	showToken := c.Bool(fShowToken)
	w := c.App.Writer
	var docs []json.RawMessage
	found := 0
	for _, e := range instances(env) {
		raw, err := fetchStatus(c.Context, e.Addr)
		if err != nil {
			if e.PID != 0 {
				fmt.Fprintf(c.App.ErrWriter, "dual-proxy status: %s (pid %d): %s\n", e.Program, e.PID, oneLine(err.Error()))
			}
			continue
		}
		found++
		if c.Bool("json") {
			docs = append(docs, withInstance(raw, e))
			continue
		}
		var st statusdoc.Status
		if err := json.Unmarshal(raw, &st); err != nil {
			continue
		}
		if found > 1 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, instanceLine(e))
		fmt.Fprintln(w, statusview.Verdict(&st))
		printPoolLink(w, e, showToken)
		said := false
		if len(e.Pools) > 0 {
			said = printPoolState(c.Context, w, e.Addr)
		}
		printFileErrors(c.Context, w, e.Addr, said)
		if err := statusview.Table(w, &st, nDecisions); err != nil {
			return err
		}
	}
	if found == 0 {
		if c.Bool("json") {
			// stdout stays one JSON document, the empty list, for a
			// script that reads it; the line on stderr and exit 1 say
			// nothing answered, as without --json.
			fmt.Fprintln(w, "[]")
		}
		return cli.Exit(fmt.Sprintf("dual-proxy status: no running dual-proxy found (looked at %s and the launchers registered in %s); start the proxy with dual-proxy, or a command behind one with dual-proxy run -- CMD (claude-dual-proxy for Claude Code)", standaloneAddr, registryDir(env)), 1)
	}
	if c.Bool("json") {
		out, _ := json.Marshal(docs)
		_, err := fmt.Fprintf(w, "%s\n", out)
		return err
	}
	return nil
}

// statusInstance is the "instance" member `dual-proxy status --json` adds
// to each status document: what the line above a status names in the text
// form, from the registry entry. PID is 0, and Command,
// Pool, Pools, LogFile and Started are left out, for an instance the
// registry does not list (the standalone address looked at anyway).
// PoolPage is the pool page's link, never with the token.
type statusInstance struct {
	Program  string     `json:"program"`
	PID      int        `json:"pid,omitempty"`
	Addr     string     `json:"addr"`
	Command  string     `json:"command,omitempty"`
	Pool     string     `json:"pool,omitempty"`
	Pools    []string   `json:"pools,omitempty"`
	PoolPage string     `json:"pool_page,omitempty"`
	LogFile  string     `json:"log_file,omitempty"`
	Started  *time.Time `json:"started,omitempty"`
}

// withInstance is the status document raw with an "instance" member (its
// first) describing e; raw as it is when it is not a JSON object.
func withInstance(raw json.RawMessage, e registry.Entry) json.RawMessage {
	body := bytes.TrimSpace(raw)
	if len(body) < 2 || body[0] != '{' {
		return raw
	}
	in := statusInstance{Program: e.Program, PID: e.PID, Addr: e.Addr, Command: e.Command, Pool: e.Pool, Pools: e.Pools, LogFile: e.LogFile}
	if !e.Started.IsZero() {
		in.Started = &e.Started
	}
	if len(e.Pools) > 0 {
		in.PoolPage = "http://" + e.Addr + "/pool/"
	}
	b, err := json.Marshal(in)
	if err != nil {
		return raw
	}
	out := append([]byte(`{"instance":`), b...)
	if rest := bytes.TrimSpace(body[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	out = append(out, body[1:]...)
	if bytes.HasSuffix(raw, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}

// printPoolLink writes the pool page URL of an instance that serves pools.
// The pool token rides in the link's fragment (which browsers never send)
// only when showToken asks for it (--show-token, like `gh auth status
// --show-token`): status output is pasted into chats and tickets, and the
// token spends the pool's keys. Without it, the line
// says how to get the link with the token.
func printPoolLink(w io.Writer, e registry.Entry, showToken bool) {
	if len(e.Pools) == 0 {
		return
	}
	link := "http://" + e.Addr + "/pool/"
	tok, err := e.Token()
	switch {
	case err != nil || tok == "":
		fmt.Fprintf(w, "pool page: %s\n", link)
	case showToken:
		fmt.Fprintf(w, "pool page: %s#token=%s\n", link, tok)
	default:
		fmt.Fprintf(w, "pool page: %s (tests and saving need its token: dual-proxy status --show-token prints the link with it)\n", link)
	}
}

// launcherProgram is the registry's name for a launcher of mode m.
func launcherProgram(m mode) string {
	if m == modeClaude {
		return "claude-dual-proxy"
	}
	return "dual-proxy run"
}

// failedRequestsHint is the line a launcher prints when its child failed
// and the proxy saw requests fail on every path: the agent's own message
// ("connection refused", "API error") rarely says why; the log does. The
// line names the hosts those requests went to, most failed first (at most
// hintHosts, then how many more): an agent's background requests
// (telemetry, update checks) failing offline are told apart from its model
// calls by their host, not counted as if they explained a model call that
// got an answer (a 400). Not counted: requests the client gave up or the
// shutdown cut (no path failed), and the pool's member calls (the pool
// reports those, and answers the agent itself).
func failedRequestsHint(prog string, ds []statusdoc.Decision, logFile string) string {
	n := 0
	perHost := map[string]int{}
	for _, d := range ds {
		if d.Error == "" || d.Caller != "" || d.Error == "client gone" || d.Error == "shutting down" {
			continue
		}
		n++
		perHost[d.Host]++
	}
	if n == 0 {
		return ""
	}
	hosts := slices.SortedFunc(maps.Keys(perHost), func(a, b string) int {
		if c := cmp.Compare(perHost[b], perHost[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var named []string
	for i, h := range hosts {
		if i == hintHosts {
			named = append(named, fmt.Sprintf("and %d more host(s)", len(hosts)-hintHosts))
			break
		}
		if perHost[h] > 1 {
			h = fmt.Sprintf("%s (%d)", h, perHost[h])
		}
		named = append(named, h)
	}
	return fmt.Sprintf("%s: %d request(s) failed on every path through the proxy, to %s; see the log: %s", prog, n, strings.Join(named, ", "), logFile)
}

// hintHosts is how many hosts failedRequestsHint names.
const hintHosts = 3

// withLogPath makes --help show the launcher's real log file for the
// environment env (where "see the log" points); without an environment
// (the man page) the per-OS hint stays.
func withLogPath(flags []cli.Flag, env []string) []cli.Flag {
	if env == nil {
		return flags
	}
	for _, f := range flags {
		if sf, ok := unwrapFlag(f).(*cli.StringFlag); ok && sf.Name == fLogFile {
			sf.DefaultText = defaultLogFile(env)
			sf.Usage = "launcher log file; \"see the log\" means this file"
		}
	}
	return flags
}

// mountMetrics serves srv's metrics at /metrics on the proxy listener, with
// the status endpoints' Host guard (DNS rebinding).
func mountMetrics(mux *proxy.Mux, srv *proxy.Server) *metrics.Metrics {
	m := metrics.New()
	m.AttachEngine(srv.Engine())
	mux.Handle(MetricsPath, statusdoc.LocalOnly(m.Handler()))
	return m
}

// MetricsPath is where the Prometheus metrics are served (SPEC OPS-5).
const MetricsPath = "/metrics"

// busyHint says which registered instance holds a port of [port,
// port+fallback] on host, for a listen error where all were in use ("" when
// none is registered there): a dual-proxy already running (a systemd unit,
// another terminal) is the usual holder, and `ss -tanp` alone did not say
// that it is ours.
func busyHint(env []string, host string, port, fallback int) string {
	var held []string
	for p := port; p <= port+fallback && p > 0 && p < 65536; p++ {
		if e, ok := instanceByAddr(env, net.JoinHostPort(reachableHost(host), strconv.Itoa(p))); ok {
			held = append(held, fmt.Sprintf("%s (pid %d) on %s", e.Program, e.PID, e.Addr))
		}
	}
	if len(held) == 0 {
		return ""
	}
	return "; already running there: " + strings.Join(held, ", ") + " (dual-proxy status shows it; --listen-port picks another port)"
}
