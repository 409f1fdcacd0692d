package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/dual-proxy/dual-proxy/internal/app/cli/hint"
	"github.com/dual-proxy/dual-proxy/internal/app/cli/statusview"
	"github.com/dual-proxy/dual-proxy/pool"
)

// poolTestTimeout bounds `dual-proxy pool test`: the pool's own bound on a
// test call plus time for the answer to travel.
const poolTestTimeout = pool.MaxTestDuration + 10*time.Second

// poolCommand is `dual-proxy pool test POOL MODEL [--addr HOST:PORT]
// [--token T] [--json]` (SPEC POOL-14): ask a running instance to send one
// real streaming call through POOL for MODEL (POST /pool/POOL/test?model=
// MODEL) and print the member hit, the time to first token, the attempts
// and the result. Flags may come before or after POOL and MODEL. The token
// is the pool token (--pool-token / DUAL_PROXY_POOL_TOKEN of the instance),
// sent as Authorization: Bearer. Without MODEL it lists POOL's models,
// without POOL the pools the running instances serve (listPools,
// listModels). Exit 0 when the call succeeded or the list was printed, 1
// when the call failed or the instance cannot be reached, 2 for usage
// errors and a pool the instance does not serve.
func poolCommand(sio IO) *cli.Command {
	return &cli.Command{
		Name:      "pool",
		Usage:     "model pool tools (see `dual-proxy pool test --help`)",
		UsageText: "dual-proxy pool test POOL MODEL [--addr HOST:PORT] [--token T] [--json]",
		Subcommands: []*cli.Command{{
			Name:      "test",
			Usage:     "send one real streaming call through a pool of a running instance; print member, time to first token, result",
			UsageText: "dual-proxy pool test POOL MODEL [--addr HOST:PORT] [--token T] [--json]\n\n   Without MODEL: the models POOL serves; without POOL: the pools the running instances serve.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "addr", EnvVars: []string{envAddr}, DefaultText: "the running instance serving POOL, else " + defaultStandalone, Usage: "the instance's listener (HOST:PORT, or PORT for 127.0.0.1)"},
				&cli.StringFlag{Name: "token", EnvVars: []string{"DUAL_PROXY_POOL_TOKEN"}, DefaultText: "the instance's own, from the registry", Usage: "the pool token (sent as Authorization: Bearer)"},
				&cli.BoolFlag{Name: "json", Usage: "print JSON: the raw test result, or the list asked for as one document"},
			},
			Action: func(c *cli.Context) error { return poolTest(c, sio.Environ) },
		}},
	}
}

// poolTestName is how pool test names itself in its messages.
const poolTestName = "dual-proxy pool test"

// poolTest is pool test's action: the positional arguments (flags may
// follow them, trailingFlags), then a list (no MODEL) or one test call.
func poolTest(c *cli.Context, env []string) error {
	const name = poolTestName
	args, err := trailingFlags(c, c.Args().Slice())
	if errors.Is(err, errWantHelp) {
		return cli.ShowSubcommandHelp(c)
	}
	if err != nil {
		return cli.Exit(name+": "+err.Error(), 2)
	}
	if len(args) == 0 || len(args) == 1 && args[0] != "" {
		return poolTestList(c, env, args)
	}
	if len(args) > 2 {
		return cli.Exit(fmt.Sprintf("%s: unexpected argument %q: pool test takes POOL and MODEL", name, args[2]), 2)
	}
	if args[0] == "" || args[1] == "" {
		return cli.Exit(name+": want POOL MODEL", 2)
	}
	return poolTestCall(c, env, args[0], args[1])
}

// poolTestList prints the list asked for: the pools (no argument), or a
// pool's models (the README presents both as uses, so they exit 0).
func poolTestList(c *cli.Context, env, args []string) error {
	var l listing
	if len(args) == 0 {
		l = listPools(c.Context, env, c.String("addr"))
	} else {
		l = listModels(c.Context, env, args[0], c.String("addr"))
	}
	if l.code != 0 {
		return cli.Exit(poolTestName+": "+l.text, l.code)
	}
	if c.Bool("json") {
		// --json is a promise about stdout: a list too is a
		// document, never the text.
		out, err := json.Marshal(l.doc)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.App.Writer, "%s\n", out)
		return err
	}
	_, err := io.WriteString(c.App.Writer, l.text)
	return err
}

// poolTestCall sends one test call through poolID for model to the
// instance poolTarget picks and prints the result: exit 0 when the call
// succeeded, 1 when it failed or the instance cannot be reached, 2 for a
// pool the instance does not serve.
func poolTestCall(c *cli.Context, env []string, poolID, model string) error {
	const name = poolTestName
	given := c.String("token")
	dest, err := poolTarget(env, poolID, c.String("addr"), given)
	if err != nil {
		return cli.Exit(name+": "+err.Error(), 2)
	}
	if dest.fallback {
		// No registered instance serves the pool: one line saying so, not
		// that and the standalone default's dial error.
		if l, serves := fallbackServes(c.Context, env, poolID, &dest); !serves {
			return cli.Exit(name+": "+l.text, l.code)
		}
	}
	addr, token, note := dest.addr, dest.token, dest.note
	raw, err := requestPoolTest(c.Context, addr, poolID, model, token)
	if err != nil {
		return poolTestError(env, c.String("addr"), dest, given, err)
	}
	if note != "" {
		fmt.Fprintln(c.App.ErrWriter, name+": "+strings.TrimSuffix(note, "; "))
	}
	var res pool.TestResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return cli.Exit(name+": "+addr+" did not answer a pool test result", 1)
	}
	if c.Bool("json") {
		doc, _ := jsonDoc(raw) // raw is JSON: Unmarshal took it
		if _, err := c.App.Writer.Write(doc); err != nil {
			return err
		}
	} else {
		statusview.PoolTest(c.App.Writer, addr, &res)
	}
	if res.Result != "ok" {
		return cli.Exit("", 1)
	}
	return nil
}

// poolTestError is the one-line exit for a test call to dest that got no
// result: dest's note, the error, and for a refused token which one the
// instance wants (tokenHint); exit 2 for the pool's own "no pool X" (a
// pool the instance does not serve), else 1. addrFlag and
// given are --addr's and --token's values.
func poolTestError(env []string, addrFlag string, dest poolDest, given string, err error) error {
	msg, code := dest.note+oneLine(err.Error()), 1
	var ae *answerError
	if errors.As(err, &ae) && (ae.status == http.StatusUnauthorized || ae.status == http.StatusForbidden) {
		msg += "; " + tokenHint(env, dest.addr, given, dest.token)
	}
	if errors.As(err, &ae) && ae.status == http.StatusNotFound && ae.pool {
		// An instance without a pool configuration (noPool) stays 1, as
		// its listing does.
		code = 2
	}
	if _, fromEnv := addrSource(env, addrFlag); fromEnv && addrFlag != "" {
		msg += envAddrNote("pool test finds the instance serving the pool")
	}
	return cli.Exit(poolTestName+": "+msg, code)
}

// poolDest is where `dual-proxy pool test` sends its call (poolTarget).
type poolDest struct {
	// addr is the instance (HOST:PORT), token the pool token to send ("" for
	// none).
	addr, token string
	// note, when not "", is said before the answer or a connection error:
	// which of several instances serving the pool is tested, or that none
	// is registered for it.
	note string
	// fallback: no --addr and no registered instance serves the pool, so
	// addr is the standalone default (standaloneAddr); running lists the
	// pools the registered instances serve ("POOL on HOST:PORT").
	fallback bool
	running  []string
}

// standaloneAddr is where status looks besides the registry, and pool
// test for a pool no registered instance serves: the standalone proxy's
// default listener, which may run without a registry entry (a service with
// another runtime directory). The package's tests point it at a refused
// port, so the user's own proxy on 7898 is never found by a test.
var standaloneAddr = defaultStandalone

// poolTarget is the instance to test poolID on and its token: --addr and
// --token when given; else the registered instance serving poolID, else the standalone default (fallback); the token, when not
// given, from the registry entry of that address. The error is a bad
// --addr.
func poolTarget(env []string, poolID, addrFlag, token string) (poolDest, error) {
	addr, note, fallback := "", "", false
	var served []string
	if addrFlag != "" {
		a, err := statusAddr(addrFlag)
		if err != nil {
			src, _ := addrSource(env, addrFlag)
			return poolDest{}, fmt.Errorf("%s: %v", src, err)
		}
		addr = a
	} else {
		var serving []string
		for _, e := range instances(env) {
			if slices.Contains(e.Pools, poolID) {
				serving = append(serving, e.Addr)
				continue
			}
			for _, p := range e.Pools {
				served = append(served, p+" on "+e.Addr)
			}
		}
		if len(serving) > 0 {
			addr = serving[0]
		}
		if len(serving) > 1 {
			// Several instances (e.g. a standalone one and a launcher's)
			// serve the pool: say which one is tested.
			note = fmt.Sprintf("%d running instances serve pool %q (%s); testing %s, --addr picks another; ",
				len(serving), poolID, strings.Join(serving, ", "), addr)
		}
		if addr == "" {
			addr, fallback = standaloneAddr, true
			note = noneServes(poolID, served) + "; "
		}
	}
	if token == "" {
		if e, ok := instanceByAddr(env, addr); ok {
			token, _ = e.Token()
		}
	}
	return poolDest{addr: addr, token: token, note: note, fallback: fallback, running: served}, nil
}

// noneServes says that no registered instance serves poolID and names the
// pools running ("POOL on HOST:PORT") when there are any.
func noneServes(poolID string, running []string) string {
	s := fmt.Sprintf("no running instance serves pool %q", poolID)
	if len(running) > 0 {
		s += " (running: " + strings.Join(running, ", ") + ")"
	}
	return s
}

// fallbackServes asks the standalone default a fallback dest points at
// (poolTarget) whether it serves poolID, as /pool/status lists its pools.
// It does: the pool is tested there, without dest's note (true). It does
// not, or nothing answers there: the one line to exit with (false): code
// 2 when instances run other pools (a pool that does not exist),
// naming them; 1 when none runs (no instance to ask).
func fallbackServes(ctx context.Context, env []string, poolID string, dest *poolDest) (listing, bool) {
	running := dest.running
	if raw, err := fetchDoc(ctx, dest.addr, "/pool/status"); err == nil {
		var doc statusview.PoolDoc
		if json.Unmarshal(raw, &doc) == nil {
			for _, p := range doc.Pools {
				if p.ID == poolID {
					dest.note = ""
					return listing{}, true
				}
				if on := p.ID + " on " + dest.addr; !slices.Contains(running, on) {
					running = append(running, on)
				}
			}
		}
	}
	if len(running) > 0 {
		return listing{noneServes(poolID, running) + "; dual-proxy pool test lists the pools", 2, nil}, false
	}
	return listing{fmt.Sprintf("pool %q: no dual-proxy is running (looked at %s and the instances registered in %s); start one: dual-proxy --config FILE, or dual-proxy run --pool %s -- CMD",
		poolID, dest.addr, registryDir(env), poolID), 1, nil}, false
}

// errWantHelp: --help or -h came after POOL or MODEL.
var errWantHelp = errors.New("help wanted")

// trailingFlags applies --addr, --token and --json given after the
// positional arguments (urfave/cli stops at the first one) and returns the
// positional arguments; errWantHelp for --help.
func trailingFlags(c *cli.Context, args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		flagName, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch flagName {
		case "json":
			if !hasValue {
				value = "true"
			}
		case "addr", "token":
			if !hasValue {
				if i+1 >= len(args) {
					return nil, fmt.Errorf("--%s needs a value (--%s VALUE or --%s=VALUE)", flagName, flagName, flagName)
				}
				i++
				value = args[i]
			}
		case "help", "h":
			return nil, errWantHelp
		default:
			// As a flag before POOL gets it from usageHint.
			if s := hint.Suggest(flagName, []string{"addr", "token", "json", "help"}); s != "" {
				return nil, fmt.Errorf("unknown flag %s; did you mean --%s?", a, s)
			}
			return nil, fmt.Errorf("unknown flag %s; see dual-proxy pool test --help", a)
		}
		if err := c.Set(flagName, value); err != nil {
			return nil, fmt.Errorf("invalid value %q for flag %s", value, a)
		}
	}
	return pos, nil
}

// requestPoolTest POSTs /pool/{pool}/test?model=M to the instance at addr,
// directly (never through the environment's HTTP_PROXY), and returns the
// JSON result. A non-200 answer is an error carrying the pool's message.
func requestPoolTest(ctx context.Context, addr, poolID, model, token string) ([]byte, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, poolTestTimeout)
	defer cancel()
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	u := "http://" + addr + "/pool/" + url.PathEscape(poolID) + "/test?model=" + url.QueryEscape(model)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("cannot reach an instance at %s: %v", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the answer from %s: %v", addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		var doc struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg, fromPool := resp.Status, false
		if json.Unmarshal(body, &doc) == nil && doc.Error.Message != "" {
			msg, fromPool = fmt.Sprintf("%d %s", resp.StatusCode, doc.Error.Message), true
		} else if line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n"); line != "" && len(line) <= 300 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			msg = fmt.Sprintf("%d %s", resp.StatusCode, line) // e.g. an instance without a pool (noPool)
		}
		return nil, &answerError{status: resp.StatusCode, msg: addr + ": " + msg, pool: fromPool}
	}
	return body, nil
}

// answerError is a non-200 answer to a pool test: status is its HTTP
// status, msg the instance and the pool's message; pool, whether the
// answer is the pool's own JSON error (not, e.g., noPool's line).
type answerError struct {
	status int
	msg    string
	pool   bool
}

func (e *answerError) Error() string { return e.msg }

// noPool answers /pool/ on an instance started without a model pool
// configuration (SPEC POOL-13): 404 with one line saying so, so the status
// page's "model pools" link and a base URL aimed at the wrong instance
// explain themselves instead of "404 page not found".
var noPool = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "no model pool on this instance: it was started without a pool configuration (--config FILE, e.g. contrib/config.example.yaml)", http.StatusNotFound)
})
