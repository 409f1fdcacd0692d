package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/envrewrite"
	proxystatus "github.com/dual-proxy/dual-proxy/proxy/status"
)

// fShowToken is status's flag that prints the pool page link with its token.
const fShowToken = "show-token"

// statusTimeout bounds the whole `dual-proxy status` request.
const statusTimeout = 5 * time.Second

// statusCommand is `dual-proxy status [--addr HOST:PORT] [--json]`: fetch
// GET /_dual-proxy/status from a running proxy and print it as aligned
// tables (SPEC OPS-2). It talks to the proxy directly, never through the
// environment's HTTP_PROXY. Exit 1 with one line when the proxy cannot be
// reached or does not answer a status; exit 2 for a bad --addr (LIS-5).
func statusCommand(sio IO) *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show the running proxies and launchers: candidates, cooldowns, health, per-host cache and recent decisions",
		UsageText: "dual-proxy status [--addr HOST:PORT] [--json] [--decisions N] [--show-token]\n\n   Without --addr: the standalone proxy on " + defaultStandalone + " and every running launcher\n   (registered in $XDG_RUNTIME_DIR/dual-proxy), each under a line naming it and its log file.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", EnvVars: []string{envAddr}, DefaultText: "every running instance", Usage: "one proxy's listener (HOST:PORT, or PORT for 127.0.0.1)"},
			&cli.BoolFlag{Name: "json", Usage: "print the raw JSON status document (without --addr: a JSON array, one per instance)"},
			&cli.BoolFlag{Name: fShowToken, Usage: "print each pool page link with its token (#token=…, for the page's test button and editor); off by default so pasted output never carries it"},
			&cli.IntFlag{Name: "decisions", Value: 20, Usage: "how many recent decisions to list (newest first, at most 200)"},
		},
		Action: func(c *cli.Context) error {
			if n := c.Int("decisions"); n < 0 || n > 200 {
				return cli.Exit("dual-proxy status: --decisions: must be 0-200", 2)
			}
			if c.String("addr") == "" {
				return statusAll(c, sio.Environ, c.Int("decisions"))
			}
			src, fromEnv := addrSource(sio.Environ, c.String("addr"))
			addr, err := statusAddr(c.String("addr"))
			if err != nil {
				return cli.Exit("dual-proxy status: "+src+": "+err.Error(), 2)
			}
			raw, err := fetchStatus(c.Context, addr)
			if err != nil {
				// What to do next: ask the registry instead; an address
				// from the environment is not left out by leaving out
				// --addr.
				hint := "; without --addr, dual-proxy status lists the running instances"
				if fromEnv {
					hint = envAddrNote("dual-proxy status lists the running instances")
				}
				return cli.Exit("dual-proxy status: "+oneLine(err.Error())+hint, 1)
			}
			if c.Bool("json") {
				_, err := c.App.Writer.Write(raw)
				return err
			}
			var st proxystatus.Status
			if err := json.Unmarshal(raw, &st); err != nil {
				return cli.Exit("dual-proxy status: "+addr+" did not answer a dual-proxy status document", 1)
			}
			fmt.Fprintln(c.App.Writer, verdict(&st))
			if e, ok := instanceByAddr(sio.Environ, addr); ok {
				printPoolLink(c.App.Writer, e, c.Bool(fShowToken))
			}
			printPoolState(c.Context, c.App.Writer, addr)
			return printStatus(c.App.Writer, &st, c.Int("decisions"))
		},
	}
}

// envAddr is the variable of status's and pool test's --addr.
const envAddr = "DUAL_PROXY_ADDR"

// addrSource names where the --addr value came from, for messages:
// "environment variable DUAL_PROXY_ADDR (--addr)" when the environment
// holds that value (as LIS-5 names a variable; urfave/cli takes the flag
// from it when --addr is not typed), else "--addr".
func addrSource(env []string, value string) (string, bool) {
	if v, ok := envrewrite.Get(env, envAddr); ok && v == value {
		return "environment variable " + envAddr + " (--addr)", true
	}
	return "--addr", false
}

// envAddrNote is the end of a message about an address addrSource found in
// the environment: where it came from and what happens without it (then).
func envAddrNote(then string) string {
	return "; the address is " + envAddr + "'s, set in the environment; with it unset (and no --addr), " + then
}

// statusAddr validates --addr: "HOST:PORT" or a bare "PORT" (127.0.0.1).
func statusAddr(s string) (string, error) {
	if p, err := strconv.Atoi(s); err == nil {
		if p < 1 || p > 65535 {
			return "", errors.New("port must be 1-65535")
		}
		return net.JoinHostPort("127.0.0.1", s), nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return "", fmt.Errorf("want HOST:PORT, got %q", s)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("bad port %q", port)
	}
	return net.JoinHostPort(host, port), nil
}

// fetchStatus GETs the status document from the proxy at addr.
// The document is one JSON value (jsonDoc): a listener answering 200 with
// something else is an error, so --json never prints it.
func fetchStatus(ctx context.Context, addr string) ([]byte, error) {
	raw, err := fetchDoc(ctx, addr, proxystatus.StatusPath)
	if err != nil {
		return nil, err
	}
	doc, ok := jsonDoc(raw)
	if !ok {
		return nil, fmt.Errorf("%s did not answer a dual-proxy status document", addr)
	}
	return doc, nil
}

// jsonDoc returns raw when it is one JSON value, with each byte that is
// not UTF-8 (only possible inside a string) written as \ufffd, which is
// what encoding/json reads there: what --json prints goes through
// termSafe, which would show such a byte as \xHH, not a JSON escape
// (SPEC OPS-2, POOL-14). ok is false when raw is not JSON.
func jsonDoc(raw []byte) (doc []byte, ok bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	if utf8.Valid(raw) {
		return raw, true
	}
	doc = make([]byte, 0, len(raw)+16)
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && n == 1 {
			doc = append(doc, `\ufffd`...)
		} else {
			doc = append(doc, raw[i:i+n]...)
		}
		i += n
	}
	return doc, true
}

// fetchDoc GETs path from the proxy at addr directly (no HTTP_PROXY) and
// returns the body of a 200 answer.
func fetchDoc(ctx context.Context, addr, path string) ([]byte, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	u := "http://" + addr + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("cannot reach a proxy at %s: %v", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the status from %s: %v", addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s to %s (is it dual-proxy?)", addr, resp.Status, path)
	}
	return body, nil
}

// printStatus writes st as aligned text tables: a summary, candidates,
// host-scoped cooldowns, health results, the per-host cache and the last
// nDecisions decisions (newest first).
//
// One piece: one table after another on the same tabwriter, in the order
// they are printed.
func printStatus(w io.Writer, st *proxystatus.Status, nDecisions int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	now := st.Now
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }

	p("listening\t%s\n", orDash(strings.Join(st.Listeners, ", ")))
	h := st.Health
	switch {
	case !h.Enabled:
		p("health\toff\n")
	default:
		runs := "runs"
		if st.HealthRuns == 1 {
			runs = "run"
		}
		p("health\t%s, preferred %s, last run %s, %d %s\n", h.Origin, orDash(h.Preferred), since(now, h.LastRun), st.HealthRuns, runs)
	}
	p("tls probes\t%d\n", st.TLSProbes)
	p("cooldown\t%s\n", msText(st.Settings.CooldownMS))
	tw.Flush()

	healthFailed, healthPassed := map[string]bool{}, map[string]bool{}
	for _, r := range h.Results {
		healthFailed[r.Candidate], healthPassed[r.Candidate] = !r.Alive, r.Alive
	}
	section(w, "CANDIDATES (default order)")
	p("#\tCANDIDATE\tKIND\tSOURCE\tSTATE\tCOOLDOWN LEFT\tOK\tFAILED\tLAST FAILURE\n")
	for i, c := range st.Candidates {
		state := c.State
		if state == proxystatus.StateHot && healthFailed[c.Candidate] {
			state = "failing (health)" // never "hot" while its health check fails (OPS-2)
		} else if state == proxystatus.StateHot && c.Successes == 0 && !healthPassed[c.Candidate] {
			state = "untried" // no success and no passing health check: as the verdict line counts it (OPS-2)
		}
		if c.Preferred {
			state += " (preferred)"
		}
		left := "-"
		if c.State == proxystatus.StateCooling {
			left = msText(c.RemainingMS)
		}
		last := "-"
		if f := c.LastFailure; f != nil {
			last = fmt.Sprintf("%s (%s) %s: %s", f.Phase, f.Tier, since(now, f.Time), clip(f.Reason, 70))
		}
		p("%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", i+1, c.Candidate, orDash(c.Kind), c.Source, state, left, c.Successes, c.Failures, last)
	}
	tw.Flush()

	var hostRows int
	for _, c := range st.Candidates {
		hostRows += len(c.HostCooldowns)
	}
	if hostRows > 0 {
		section(w, "HOST COOLDOWNS")
		p("CANDIDATE\tHOST\tLEFT\tPHASE\tREASON\n")
		for _, c := range st.Candidates {
			for _, hc := range c.HostCooldowns {
				p("%s\t%s\t%s\t%s\t%s\n", c.Candidate, hc.Host, msText(hc.RemainingMS), hc.Phase, clip(hc.Reason, 70))
			}
		}
		tw.Flush()
	}

	if len(h.Results) > 0 {
		section(w, "HEALTH CHECK (last run)")
		p("CANDIDATE\tRESULT\tSTREAK\tELIGIBLE\tREASON\n")
		for _, r := range h.Results {
			res := "failed"
			if r.Alive {
				res = "alive"
			}
			p("%s\t%s\t%d\t%s\t%s\n", r.Candidate, res, r.Streak, yesNo(r.Eligible), orDash(clip(r.Reason, 70)))
		}
		tw.Flush()
	}

	section(w, "PER-HOST CACHE")
	if len(st.Cache) == 0 {
		fmt.Fprintln(w, "(empty)")
	} else {
		p("HOST\tCANDIDATE\tEXPIRES IN\n")
		for _, ce := range st.Cache {
			p("%s\t%s\t%s\n", ce.Host, ce.Candidate, msText(ce.RemainingMS))
		}
		tw.Flush()
	}

	section(w, fmt.Sprintf("RECENT DECISIONS (newest first, %d of %d)", min(nDecisions, len(st.Decisions)), len(st.Decisions)))
	if len(st.Decisions) == 0 || nDecisions == 0 {
		fmt.Fprintln(w, "(none)")
		return nil
	}
	p("TIME\tKIND\tHOST\tCANDIDATE\tLATENCY\tFAILED FIRST\tERROR\n")
	for i := len(st.Decisions) - 1; i >= 0 && i >= len(st.Decisions)-nDecisions; i-- {
		d := st.Decisions[i]
		var failed []string
		for _, f := range d.Failed {
			s := f.Candidate + " " + f.Phase
			if f.Status != 0 {
				s += " " + strconv.Itoa(f.Status)
			}
			failed = append(failed, s)
		}
		p("%s\t%s\t%s\t%s\t%.1f ms\t%s\t%s\n", d.Time.Local().Format("15:04:05"), d.Kind, d.Host, orDash(d.Candidate), d.LatencyMS,
			orDash(strings.Join(failed, "; ")), orDash(d.Error))
	}
	return tw.Flush()
}

func section(w io.Writer, title string) { fmt.Fprintf(w, "\n%s\n", title) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// clip shortens s to n bytes on a rune boundary, with "…" when cut, and
// keeps tabs and newlines out of the table.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// msText renders ms as "850 ms", "29.9 s" or "4 m 10 s".
func msText(ms int64) string {
	switch {
	case ms < 1000:
		return strconv.FormatInt(ms, 10) + " ms"
	case ms < 60_000:
		return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s"
	}
	return fmt.Sprintf("%d m %d s", ms/60_000, ms%60_000/1000)
}

// since renders how long before now t was ("12.0 s ago"), or "never".
func since(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return msText(max(now.Sub(t).Milliseconds(), 0)) + " ago"
}
