// Command bench measures dual-proxy against direct connections and real
// gateways (squid, tinyproxy, privoxy when installed), all on loopback, and
// prints one markdown table; with -write it also rewrites docs/BENCHMARKS.md
// (a tracked file, so a plain run never leaves the tree dirty).
//
//	cd bench
//	go run . -write           # full run, ≈ 4 minutes, updates docs/BENCHMARKS.md
//	go run . -quick           # smoke run (≈ 1–3 min), results in a temporary directory
//	go run . -only 1,3        # scenarios 1 and 3
//
// bench is a module of its own (bench/go.mod, the product replaced to ../),
// so the plotting library stays out of the product's go.mod; run it from
// bench/.
//
// Scenarios: 1 plain HTTP keep-alive, 2 CONNECT (reused tunnel, new tunnel
// + TLS, one-tunnel bulk), 3 memory of idle tunnels, 4 failover, 5 launcher
// overhead, 6 plain-HTTP curves, 7 pool streaming (TTFT, per-event delay
// and CPU per event through the model pool). Targets and the PASS/MISS
// verdicts are in the table. See
// bench/README.md.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// world is everything one bench run started: the origin, the dual-proxy
// binary, the real gateways, and the rows and notes collected so far.
type world struct {
	dpBin   string
	tmp     string
	origin  *origin
	tlsCfg  *tls.Config
	ph      phases
	bulkPh  phases
	tunnels int // idle tunnels for scenario 3
	newConc int // workers of the new-tunnel-per-request load

	profDir    string // CPU profiles of every dual-proxy instance; "" = none
	started    int    // dual-proxy instances started (profile file names)
	compareBin string // -compare: second binary for [B] rows; "" = none
	built      string // which source the dual-proxy binary came from

	gw     map[string]*proc // real gateways by name; missing = not installed
	gwVers []string
	rows   []row
	notes  []string
	charts []*chart // curves of the run (plots.go)
	limit  uint64   // RLIMIT_NOFILE soft limit in effect (children inherit it)
}

func (w *world) add(r row)               { w.rows = append(w.rows, r) }
func (w *world) note(f string, a ...any) { w.notes = append(w.notes, fmt.Sprintf(f, a...)) }

func main() {
	var (
		quick   = flag.Bool("quick", false, "short rounds and 1,000 tunnels (smoke test)")
		write   = flag.Bool("write", false, "also write the table to docs/BENCHMARKS.md (or -out) and the curves to docs/benchmarks/*.svg")
		_       = flag.Bool("no-write", false, "ignored: not writing is the default (kept for old command lines)")
		only    = flag.String("only", "1,2,3,4,5,6,7", "comma-separated scenarios to run (6: plain-HTTP curves, 7: pool streaming)")
		round   = flag.Duration("round", 900*time.Millisecond, "length of one measured round")
		rounds  = flag.Int("rounds", 4, "measured rounds per configuration")
		warm    = flag.Duration("warm", 300*time.Millisecond, "warm-up before each round")
		tunnels = flag.Int("tunnels", 9000, "idle tunnels for the memory scenario (also measured at 1,000, 3,000 and 6,000)")
		dpBin   = flag.String("dual-proxy", "", "prebuilt dual-proxy binary (default: go build ./cmd/dual-proxy)")
		results = flag.String("results", "", "directory for this run's BENCHMARKS.md and SVG curves (default: a new temporary directory, printed at the end)")
		out     = flag.String("out", "", "output file, implies -write (default: <module root>/docs/BENCHMARKS.md)")
		profDir = flag.String("cpuprofile", "", "directory: run dual-proxy built from ./bench/dpprof, each instance writing NAME-N.pprof there")
		compare = flag.String("compare", "", "second dual-proxy binary: scenarios 1, 2, 4, 5 and 7 add its rows (A/B a proxy change)")
		relay   = flag.Bool("relay-serve", false, "internal: serve the reference CONNECT relay (a child process of the bench)")
		relayCB = flag.Bool("relay-copybuf", false, "internal: with -relay-serve, relay through a 32 KiB Read/Write loop")
		newConc = flag.Int("new-conc", 8, "workers of the new-tunnel-per-request load (scenario 2)")
		streams = flag.String("pool-streams", "1,16,64,256", "concurrent streams of scenario 7 (comma-separated; e.g. one value to profile one load)")
		mockLLM = flag.Bool("poolmock-serve", false, "internal: serve scenario 7's mock model channel (a child process of the bench)")
		sseRly  = flag.String("sserelay-serve", "", "internal: serve scenario 7's reference streaming relay to this mock address (a child process of the bench)")
		spin    = flag.Bool("spin-serve", false, "internal: busy-loop on every core (scenario 1's diagnostic rows run it at idle priority)")
	)
	flag.Parse()
	if err := setPoolConcs(*streams); err != nil {
		fmt.Fprintln(os.Stderr, "bench: -pool-streams:", err)
		os.Exit(2)
	}
	if *spin {
		serveSpin()
	}
	if *sseRly != "" {
		if err := serveSSERelay(*sseRly); err != nil {
			fmt.Fprintln(os.Stderr, "bench SSE relay:", err)
			os.Exit(1)
		}
		return
	}
	if *mockLLM {
		if err := serveStreamMock(); err != nil {
			fmt.Fprintln(os.Stderr, "bench pool mock:", err)
			os.Exit(1)
		}
		return
	}
	if *relay {
		if err := serveRelay(*relayCB); err != nil {
			fmt.Fprintln(os.Stderr, "bench relay:", err)
			os.Exit(1)
		}
		return
	}
	if *quick {
		*round, *rounds, *warm, *tunnels = 300*time.Millisecond, 2, 200*time.Millisecond, 1000
	}
	if err := runAll(*only, *dpBin, *out, *results, !*write && *out == "", phases{warm: *warm, round: *round, rounds: *rounds}, *tunnels, *newConc, *profDir, *compare); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// runAll runs the scenarios named by only (all when empty) and writes the
// results. One piece: it is the bench's top-level sequence (build, start
// the world, each scenario, report), sharing the deferred cleanup of tmp.
func runAll(only, dpBin, out, results string, noWrite bool, ph phases, tunnels, newConc int, profDir, compare string) error {
	began, loadBefore := time.Now(), loadAvg()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "dual-proxy-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	os.Chmod(tmp, 0o755)

	w := newWorld(tmp, ph, tunnels, newConc)
	if err := w.binaries(root, dpBin, profDir, compare); err != nil {
		return err
	}
	if err := w.startOrigin(); err != nil {
		return err
	}
	defer w.origin.close()
	defer w.startGateways()()
	if err := w.scenarios(only); err != nil {
		return err
	}
	w.methodNotes()

	fmt.Println(table(w.rows))
	for _, n := range w.notes {
		fmt.Println("- " + n)
	}
	facts := w.facts(ph, loadBefore)
	return w.writeResults(root, out, results, noWrite, facts, began)
}

// newWorld is the bench's world with the file limit raised: when it cannot
// be raised enough for 2 fds per tunnel, the memory scenario opens fewer
// tunnels and a note says so.
func newWorld(tmp string, ph phases, tunnels, newConc int) *world {
	limit := raiseNoFile(1 << 17)
	w := &world{tmp: tmp, ph: ph, tunnels: tunnels, newConc: newConc, gw: map[string]*proc{},
		bulkPh: phases{warm: ph.warm / 2, round: max(ph.round/2, 200*time.Millisecond), rounds: ph.rounds}}
	w.limit = limit
	if need := 2*tunnels + 1000; limit < uint64(need) {
		w.tunnels = max(int(limit/2)-600, 100) // the bench holds 2 fds per tunnel (client, origin)
		w.note("RLIMIT_NOFILE could only be raised to %d: the memory scenario opened %d tunnels instead of %d.", limit, w.tunnels, tunnels)
	}
	return w
}

// binaries settles the dual-proxy binaries under test: dpBin when given,
// else one built from the product (from bench/dpprof when profDir asks for
// CPU profiles), and compare, the -compare binary of the [B] rows.
func (w *world) binaries(root, dpBin, profDir, compare string) error {
	if dpBin == "" {
		pkg := "./cmd/dual-proxy"
		if profDir != "" {
			pkg = "./bench/dpprof"
			var err error
			if profDir, err = filepath.Abs(profDir); err != nil {
				return err
			}
			if err := os.MkdirAll(profDir, 0o755); err != nil {
				return err
			}
		}
		var err error
		if dpBin, err = w.build(root, pkg); err != nil {
			return err
		}
	}
	w.dpBin, w.profDir, w.compareBin = dpBin, profDir, compare
	if compare != "" {
		w.note("Rows marked [B] ran %s (-compare), the others the dual-proxy under test.", compare)
	}
	return nil
}

// startOrigin starts the raw-socket origin, TLS on 127.0.0.1:443 when it
// can bind it (dual-proxy's TLS probe runs for port 443 only, and the
// table must measure it).
func (w *world) startOrigin() error {
	var err error
	if w.origin, err = newOrigin("127.0.0.1:443"); err != nil {
		return err
	}
	w.tlsCfg = &tls.Config{RootCAs: w.origin.certPool, MinVersion: tls.VersionTLS12}
	if strings.HasSuffix(w.origin.tlsAddr(), ":443") {
		w.note("The TLS origin listens on 127.0.0.1:443, so dual-proxy's TLS probe (port 443 only, SPEC CON-1) runs where the table says it does.")
	} else {
		w.note("Could not bind 127.0.0.1:443 (not root?): the TLS origin is on %s and dual-proxy never probes it; the probe rows measure no probe.", w.origin.tlsAddr())
	}
	return nil
}

// startGateways starts each installed real gateway (a missing one leaves
// its rows out, with a note) and returns the function that stops them.
func (w *world) startGateways() (stop func()) {
	var started []*proc
	for _, g := range realGateways {
		p, err := w.startGateway(g)
		if err != nil {
			w.note("%s could not be started: %v", g.name, err)
			continue
		}
		if p == nil {
			w.note("%s is not installed: its rows are left out.", g.name)
			continue
		}
		w.gw[g.name] = p
		started = append(started, p)
	}
	w.gwVers = gatewayVersions(w.gw)
	return func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].stop()
		}
	}
}

// scenarios runs the scenarios named in only ("1,3"), in that order; the
// first that fails ends the run with its number in the error.
func (w *world) scenarios(only string) error {
	for _, s := range strings.Split(only, ",") {
		var err error
		switch strings.TrimSpace(s) {
		case "1":
			err = w.plainHTTP()
		case "2":
			err = w.connect()
		case "3":
			err = w.memory()
		case "4":
			err = w.failover()
		case "5":
			err = w.launcher()
		case "6":
			err = w.curves()
		case "7":
			err = w.poolStreaming()
		default:
			err = fmt.Errorf("unknown scenario %q", s)
		}
		if err != nil {
			return fmt.Errorf("scenario %s: %w", s, err)
		}
	}
	return nil
}

// facts are the run's header lines: the command, a smoke-run warning, the
// load average before and after, the build and the gateways' versions.
func (w *world) facts(ph phases, loadBefore string) []string {
	facts := []string{"Command: `cd bench && go run . " + strings.Join(os.Args[1:], " ") + "`"}
	if ph.rounds <= 2 && ph.round <= 300*time.Millisecond {
		facts = append(facts, fmt.Sprintf("**Smoke run** (%d rounds of %v): too short for the verdicts to mean anything; run without -quick for figures.", ph.rounds, ph.round))
	}
	facts = append(facts, fmt.Sprintf("Load average (1 min, 5 min, 15 min) before the run %s, after %s: other jobs on the machine share the cores, which is what the spread column shows.", loadBefore, loadAvg()))
	if w.built != "" {
		facts = append(facts, w.built)
	}
	if len(w.gwVers) > 0 {
		facts = append(facts, "Gateways: "+strings.Join(w.gwVers, "; "))
	}
	return facts
}

// writeResults writes the run into results (a new temporary directory when
// empty), so a casual run changes no tracked file; unless noWrite it also
// rewrites out (docs/BENCHMARKS.md by default, keeping its hand-written
// notes) and its charts.
func (w *world) writeResults(root, out, results string, noWrite bool, facts []string, began time.Time) error {
	now, elapsed := time.Now(), time.Since(began)
	if results == "" {
		var err error
		if results, err = os.MkdirTemp("", "dual-proxy-bench-results-"); err != nil {
			return err
		}
	}
	if err := w.writeCharts(filepath.Join(results, chartDir)); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(results, "BENCHMARKS.md"), []byte(document("", now, facts, w.rows, w.notes, w.charts, elapsed)), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "results in", results)
	if noWrite {
		return nil
	}
	if out == "" {
		out = filepath.Join(root, "docs", "BENCHMARKS.md")
	}
	prev, _ := os.ReadFile(out)
	if err := w.writeCharts(filepath.Join(filepath.Dir(out), chartDir)); err != nil {
		return err
	}
	doc := document(string(prev), now, facts, w.rows, w.notes, w.charts, elapsed)
	if err := os.WriteFile(out, []byte(doc), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "wrote", out)
	return nil
}

// build compiles pkg of the working tree; when that fails (another
// engineer is mid-edit), it compiles pkg from a `git archive HEAD` export
// and says so in the notes.
func (w *world) build(root, pkg string) (string, error) {
	bin := filepath.Join(w.tmp, "dual-proxy")
	dir, rel := packageModule(root, pkg)
	cmd := releaseBuild(bin, rel)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		rev, _ := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
		dirty, _ := exec.Command("git", "-C", root, "status", "--porcelain", "--", "proxy", "cmd", "internal", "launcher").Output()
		w.built = "dual-proxy built as the release archives build it (CGO_ENABLED=0, -trimpath, -tags urfave_cli_no_docs, -ldflags '-s -w') from the working tree at commit " + strings.TrimSpace(string(rev))
		if n := strings.Count(string(dirty), "\n"); n > 0 {
			w.built += fmt.Sprintf(" with %d uncommitted file(s) under proxy/, cmd/, internal/, launcher/", n)
		}
		return bin, nil
	}
	src := filepath.Join(w.tmp, "head")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	exp := exec.Command("sh", "-c", "git archive HEAD | tar -x -C "+src)
	exp.Dir = root
	if b, err := exp.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s\n(git archive fallback: %v %s)", pkg, err, out, err, b)
	}
	dir, rel = packageModule(src, pkg)
	cmd = releaseBuild(bin, rel)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s\n(HEAD: %s)", pkg, err, out, b)
	}
	rev, _ := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	w.built = "dual-proxy built as the release archives build it (CGO_ENABLED=0, -trimpath, -tags urfave_cli_no_docs, -ldflags '-s -w') from the last commit " + strings.TrimSpace(string(rev)) + " (the working tree did not compile)"
	w.note("The working tree did not compile (%s), so dual-proxy was built from the last commit %s.", firstLine(string(out)), strings.TrimSpace(string(rev)))
	return bin, nil
}

// releaseTags are the build tags of the release archives: urfave_cli_no_docs
// leaves urfave/cli's Markdown and man-page generator (go-md2man,
// blackfriday) out; the binary prints man pages rendered at test time.
const releaseTags = "urfave_cli_no_docs"

// releaseBuild returns the go build command for pkg into bin with the
// settings of the release archives in .goreleaser.yaml (CGO_ENABLED=0,
// -trimpath, -tags urfave_cli_no_docs, -ldflags "-s -w"), so RSS, start-up and CPU rows measure the
// binary users install rather than a cgo development build (whose libc and
// dynamic loader add ≈ 1.4 MiB RSS and ≈ 1 ms per start). Profiles still
// symbolize: -s -w drops the ELF symbol table and DWARF, not Go's pclntab.
func releaseBuild(bin, pkg string) *exec.Cmd {
	cmd := exec.Command("go", "build", "-trimpath", "-tags", releaseTags, "-ldflags", "-s -w", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return strings.TrimSpace(s)
}

// productModule is the module path of dual-proxy itself; the bench is a
// module of its own inside it (bench/go.mod, replaced to ../).
const productModule = "github.com/dual-proxy/dual-proxy"

// moduleRoot walks up from the working directory to the directory whose
// go.mod declares productModule (so it is found from bench/ as well).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for i := 0; i < 20; i++ {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declares(string(b), productModule) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", fmt.Errorf("no go.mod of %s above the working directory", productModule)
}

// declares reports whether the go.mod text gomod declares module path.
func declares(gomod, path string) bool {
	for _, l := range strings.Split(gomod, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == path
		}
	}
	return false
}

// packageModule returns pkg (a "./"-path relative to root) as the go
// command needs it: the directory of the module that holds it, and pkg
// relative to that. Packages under ./bench/ are in the bench module.
func packageModule(root, pkg string) (dir, rel string) {
	if r, ok := strings.CutPrefix(pkg, "./bench/"); ok {
		return filepath.Join(root, "bench"), "./" + r
	}
	return root, pkg
}

func gatewayVersions(gw map[string]*proc) []string {
	var v []string
	for _, g := range realGateways {
		if gw[g.name] == nil {
			continue
		}
		flag := "-v"
		if g.name == "privoxy" {
			flag = "--version"
		}
		if s := version(g.bin, flag); s != "" {
			v = append(v, s)
		}
	}
	return v
}

// methodNotes adds the fixed description of the method.
func (w *world) methodNotes() {
	w.note("Each load configuration: %d rounds of %v, each after its own %v warm-up on fresh connections, interleaved across the rows of one comparison (the first round of every row, then the second …; within a round forward and reversed in turn) so that background load hits all rows alike; the table shows the median round and the spread (max−min)/median of req/s. In scenario 2's comparisons every ratio (vs direct, vs squid and the targets' \"≥ Go relay\") is the median of the per-round ratios of the two rows, which share each round's background load, and the reused-tunnel comparison has twice the rounds. Latency p50/p99 are the medians of the per-round percentiles. Every operation has a %v deadline.", w.ph.rounds, w.ph.round, w.ph.warm, opTimeout)
	w.note("Load generator: Go, raw HTTP/1.1 on keep-alive sockets (one per worker), absolute-form through a proxy for plain HTTP, CONNECT then TLS 1.3 (ECDSA P-256, no session resumption) for tunnels. The origin is a raw-socket Go HTTP/1.1 server answering 3 bytes.")
	w.note("dual-proxy runs as a separate process built from ./cmd/dual-proxy with the release archives' settings (CGO_ENABLED=0, -trimpath, -tags urfave_cli_no_docs, -ldflags '-s -w', as .goreleaser.yaml; a cgo build idles ≈ 1.4 MiB higher), always with --health-url '' and --upstream-host '' (no default 7897 gateway) unless a gateway is named.")
	w.note("Real gateways run with access logging off (squid access_log none, tinyproxy LogLevel Warning, privoxy without debug) so they are not penalised for logging that dual-proxy does not do.")
}
