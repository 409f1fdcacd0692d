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
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/envrewrite"
	"github.com/dual-proxy/dual-proxy/internal/app/cli/statusview"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// fShowToken is status's flag that prints the pool page link with its token.
const fShowToken = "show-token"

// statusTimeout bounds the whole `dual-proxy status` request.
const statusTimeout = 5 * time.Second

// statusCommand is `dual-proxy status [--addr HOST:PORT] [--json]`: fetch
// GET /_dual-proxy/status from a running proxy and print it as aligned
// tables (SPEC OPS-2). It talks to the proxy directly, never through the
// environment's HTTP_PROXY. Exit 1 with one line when the proxy cannot be
// reached or does not answer a status; exit 2 for a bad --addr.
func statusCommand(sio IO) *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show the running proxies and launchers: candidates, cooldowns, health, per-host cache and recent decisions",
		UsageText: "dual-proxy status [--addr HOST:PORT] [--json] [--decisions N] [--show-token]\n\n   Without --addr: every running instance registered in $XDG_RUNTIME_DIR/dual-proxy (standalone\n   proxies on any port and launchers alike), and " + defaultStandalone + " when none of them listens there,\n   each that answers under a line naming it and its log file; --addr shows one instance only.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", EnvVars: []string{envAddr}, DefaultText: "every running instance", Usage: "one proxy's listener (HOST:PORT, or PORT for 127.0.0.1)"},
			&cli.BoolFlag{Name: "json", Usage: "print the JSON status document, with an \"instance\" member (pid, command, pools, log file) when the registry lists it (without --addr: a JSON array, one per instance)"},
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
				if e, ok := instanceByAddr(sio.Environ, addr); ok {
					raw = withInstance(raw, e)
				}
				_, err := c.App.Writer.Write(raw)
				return err
			}
			var st statusdoc.Status
			if err := json.Unmarshal(raw, &st); err != nil {
				return cli.Exit("dual-proxy status: "+addr+" did not answer a dual-proxy status document", 1)
			}
			fmt.Fprintln(c.App.Writer, statusview.Verdict(&st))
			if e, ok := instanceByAddr(sio.Environ, addr); ok {
				printPoolLink(c.App.Writer, e, c.Bool(fShowToken))
			}
			said := printPoolState(c.Context, c.App.Writer, addr)
			printFileErrors(c.Context, c.App.Writer, addr, said)
			return statusview.Table(c.App.Writer, &st, c.Int("decisions"))
		},
	}
}

// envAddr is the variable of status's and pool test's --addr.
const envAddr = "DUAL_PROXY_ADDR"

// addrSource names where the --addr value came from, for messages:
// "environment variable DUAL_PROXY_ADDR (--addr)" when the environment
// holds that value (urfave/cli takes the flag from it when --addr is not
// typed, and a user who never typed --addr looks for the variable), else
// "--addr".
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
	raw, err := fetchDoc(ctx, addr, statusdoc.StatusPath)
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
// termSafe, which would show such a byte as \xHH, not a JSON escape, and
// the output would no longer parse. ok is false when raw is not JSON.
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
