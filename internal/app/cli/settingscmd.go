package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/dual-proxy/dual-proxy/internal/app/registry"
	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// settingsName is how the settings command names itself in its messages.
const settingsName = "dual-proxy settings"

// settingsTimeout bounds one settings command (a read and a change).
const settingsTimeout = 15 * time.Second

// settingsCommand is `dual-proxy settings [--addr ADDR] get|set|gateway|
// token`: read and change the proxy settings of a running instance, a
// launcher too, without restarting it (SPEC OPS-7), found through the
// instance registry like status. Exit 0 on success, 1 when no instance or
// several are found without --addr, or the instance cannot be reached or
// refuses the change (token, version), 2 for usage errors and values the
// instance rejects (nothing is applied then), 3 from get when the
// config file's last reload was refused.
func settingsCommand(sio IO) *cli.Command {
	sub := func(name, usage, usageText string, action func(*cli.Context, *settings.Client, []string) error) *cli.Command {
		return &cli.Command{Name: name, Usage: usage, UsageText: usageText, Flags: settingsFlags(), Action: func(c *cli.Context) error {
			cl, err := settingsClient(c, sio.Environ)
			if err != nil {
				return err
			}
			return action(c, cl, c.Args().Slice())
		}}
	}
	return &cli.Command{
		Name:      "settings",
		Usage:     "read and change the proxy settings of a running instance (a launcher too) without restarting it",
		UsageText: "dual-proxy settings [--addr HOST:PORT] get [KEY]\ndual-proxy settings [--addr HOST:PORT] set KEY=VALUE...\ndual-proxy settings [--addr HOST:PORT] gateway list\ndual-proxy settings [--addr HOST:PORT] gateway add|remove URL\ndual-proxy settings [--addr HOST:PORT] token\n\n   Without --addr: the one running instance in the registry ($XDG_RUNTIME_DIR/dual-proxy).\n   Keys are the long flag names (gateway, cooldown-ms, prefer-direct, ...); a list is comma-separated,\n   KEY= empties it, KEY=null returns the key to its default. The listener's address needs a restart.",
		Flags:     settingsFlags(),
		Subcommands: []*cli.Command{
			sub("get", "print the settings (or one KEY's value) and where each came from", "dual-proxy settings get [KEY]", settingsGet),
			sub("set", "change settings at once, all or nothing", "dual-proxy settings set KEY=VALUE...", settingsSet),
			{
				Name:      "gateway",
				Usage:     "list the gateways, add one at the end of the list, or remove one",
				UsageText: gatewayUsage,
				Flags:     settingsFlags(),
				// A word that is no verb ("show", "ls") is answered with
				// what to type, not with the help of another command.
				Action: func(c *cli.Context) error {
					if c.NArg() == 0 {
						return cli.ShowSubcommandHelp(c)
					}
					return cli.Exit(fmt.Sprintf("%s gateway: %q is no verb; want one of:\n%s", settingsName, c.Args().First(), gatewayUsage), 2)
				},
				Subcommands: []*cli.Command{
					sub("list", "print the gateways in order, one a line (passwords masked)", "dual-proxy settings gateway list", settingsGatewayList),
					sub("add", "add URL at the end of the gateways, or change the one of its host:port in place", "dual-proxy settings gateway add URL", settingsGatewayEdit(true)),
					sub("remove", "remove the gateway of URL's host:port", "dual-proxy settings gateway remove URL", settingsGatewayEdit(false)),
				},
			},
			sub("token", "print the control token and the status page link carrying it", "dual-proxy settings token", settingsToken),
		},
	}
}

// gatewayUsage is the usage of `dual-proxy settings gateway`.
const gatewayUsage = "dual-proxy settings gateway list\ndual-proxy settings gateway add URL\ndual-proxy settings gateway remove URL"

// settingsFlags are the flags of settings and of each of its verbs, so
// they may come before the verb or after it.
func settingsFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "addr", EnvVars: []string{envAddr}, DefaultText: "the one running instance", Usage: "the instance's listener (HOST:PORT, or PORT for 127.0.0.1)"},
		&cli.StringFlag{Name: "token", EnvVars: []string{envControlToken}, DefaultText: "the instance's own, from the registry", Usage: "the instance's control token (sent as Authorization: Bearer)"},
		&cli.BoolFlag{Name: "json", Usage: "print the settings document as JSON"},
	}
}

// flagString is flag name's value as typed after the verb, else before
// it, else its variable or default.
func flagString(c *cli.Context, name string) string {
	for _, x := range c.Lineage() {
		if x.IsSet(name) {
			return x.String(name)
		}
	}
	return c.String(name)
}

// flagBool is flagString for a switch.
func flagBool(c *cli.Context, name string) bool {
	for _, x := range c.Lineage() {
		if x.IsSet(name) {
			return x.Bool(name)
		}
	}
	return c.Bool(name)
}

// settingsClient is the client of the instance --addr names, else of the
// one instance in the registry; the token is --token, else the
// instance's own from the registry.
func settingsClient(c *cli.Context, env []string) (*settings.Client, error) {
	cl := &settings.Client{Token: flagString(c, "token"), Kind: "cli"}
	if a := flagString(c, "addr"); a != "" {
		src, _ := addrSource(env, a)
		addr, err := statusAddr(a)
		if err != nil {
			return nil, cli.Exit(settingsName+": "+src+": "+err.Error(), 2)
		}
		cl.Addr = addr
		if e, ok := instanceByAddr(env, addr); ok && cl.Token == "" {
			cl.Token, _ = e.ControlToken()
		}
		return cl, nil
	}
	dir := registryDir(env)
	es, err := registry.List(dir)
	if err != nil {
		return nil, cli.Exit(settingsName+": "+oneLine(err.Error()), 1)
	}
	switch len(es) {
	case 0:
		return nil, cli.Exit(fmt.Sprintf("%s: no running dual-proxy found (looked in %s); start the proxy with dual-proxy, or a command behind one with dual-proxy run -- CMD (claude-dual-proxy for Claude Code), or name one with --addr", settingsName, dir), 1)
	case 1:
	default:
		addrs := make([]string, len(es))
		for i, e := range es {
			addrs[i] = e.Addr + " (" + e.Program + ")"
		}
		// Exit 1 like no instance at all: the command line is right, the
		// instance to talk to is not found (docs/operations.md).
		return nil, cli.Exit(fmt.Sprintf("%s: %d instances are running (%s): name one with --addr", settingsName, len(es), strings.Join(addrs, ", ")), 1)
	}
	cl.Addr = es[0].Addr
	if cl.Token == "" {
		if cl.Token, err = es[0].ControlToken(); err != nil {
			return nil, cli.Exit(settingsName+": "+oneLine(err.Error()), 1)
		}
	}
	return cl, nil
}

// settingsCtx bounds one settings command.
func settingsCtx(c *cli.Context) (context.Context, context.CancelFunc) {
	ctx := c.Context
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, settingsTimeout)
}

// settingsFail is the one-line exit of a failed call: 2 for the field
// errors of a rejected change (nothing applied), 1 otherwise.
func settingsFail(cl *settings.Client, err error) error {
	var re *settings.RemoteError
	if errors.As(err, &re) && len(re.Errors) > 0 {
		return cli.Exit(settingsName+": nothing changed: "+oneLine(err.Error()), 2)
	}
	if errors.As(err, &re) && re.Status == http.StatusUnauthorized && cl.Token == "" {
		return cli.Exit(settingsName+": "+cl.Addr+" has no control token in the registry (started by another user, or by an older dual-proxy): pass --token", 1)
	}
	if errors.As(err, &re) {
		return cli.Exit(fmt.Sprintf("%s: %s answered %d: %s", settingsName, cl.Addr, re.Status, oneLine(err.Error())), 1)
	}
	return cli.Exit(fmt.Sprintf("%s: cannot reach a proxy at %s: %s", settingsName, cl.Addr, oneLine(err.Error())), 1)
}

// settingsGet prints the document, or KEY's value alone.
func settingsGet(c *cli.Context, cl *settings.Client, args []string) error {
	if len(args) > 1 {
		return cli.Exit(fmt.Sprintf("%s get: unexpected argument %q: get takes at most one KEY", settingsName, args[1]), 2)
	}
	ctx, cancel := settingsCtx(c)
	defer cancel()
	doc, err := cl.Get(ctx)
	if err != nil {
		return settingsFail(cl, err)
	}
	if len(args) == 1 {
		v, ok := doc.Settings[args[0]]
		if !ok {
			v, ok = doc.Fixed[args[0]]
		}
		if !ok {
			return cli.Exit(fmt.Sprintf("%s get: unknown setting %q (the settings: %s)", settingsName, args[0], strings.Join(docKeys(doc), ", ")), 2)
		}
		var err error
		if flagBool(c, "json") {
			err = json.NewEncoder(c.App.Writer).Encode(v)
		} else {
			err = printValue(c.App.Writer, v)
		}
		if err != nil {
			return err
		}
		for _, e := range doc.FileErrors {
			fmt.Fprintln(termSafe(c.App.ErrWriter), "file error (the settings stay as they were): "+e)
		}
		return fileRefused(doc)
	}
	if err := printSettings(c, doc); err != nil {
		return err
	}
	return fileRefused(doc)
}

// exitFileRefused is the exit status of `settings get` when the instance's
// config file was last refused by a reload: what runs is not what the
// file says, and a script must not take it for success.
const exitFileRefused = 3

// fileRefused is get's exit when doc shows the config file's last reload
// refused (its errors were printed), else nil.
func fileRefused(doc settings.Document) error {
	if len(doc.FileErrors) == 0 {
		return nil
	}
	return cli.Exit(fmt.Sprintf("%s: %s was not reloaded (%d error(s)): the instance runs what it ran before; fix the file and save it again, or send SIGHUP", settingsName, doc.Config, len(doc.FileErrors)), exitFileRefused)
}

// printValue prints one setting's value for `settings get KEY`: its text
// form and a newline, what `settings set KEY=…` takes back. An empty value
// (no gateways, ”, not given) prints nothing at all to a pipe or a file,
// so `$(dual-proxy settings get gateway)` is empty and `| wc -l` is 0; on a
// terminal it prints "(none)", or "(not set)" for a key not given, so a
// person sees an answer. --json tells the three apart ([], "", null).
func printValue(w io.Writer, v any) error {
	text := settings.Text(v)
	if text == "" {
		if !isTerminal(w) {
			return nil
		}
		text = emptyText(v)
	}
	_, err := fmt.Fprintln(termSafe(w), text)
	return err
}

// emptyText is how a table shows an empty value: "(not set)" for a key
// not given (null), else "(none)".
func emptyText(v any) string {
	if v == nil {
		return "(not set)"
	}
	return "(none)"
}

// isTerminal reports whether w is a terminal, seen through the escaping
// termWriter every command's output goes through (runApp).
func isTerminal(w io.Writer) bool {
	if t, ok := w.(termWriter); ok {
		w = t.w
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// docKeys are the keys of doc, live then fixed, each sorted.
func docKeys(doc settings.Document) []string {
	var live, fixed []string
	for k := range doc.Settings {
		live = append(live, k)
	}
	for k := range doc.Fixed {
		fixed = append(fixed, k)
	}
	sort.Strings(live)
	sort.Strings(fixed)
	return append(live, fixed...)
}

// printSettings prints doc as a table (KEY, VALUE, SOURCE; the fixed
// ones marked), or as JSON under --json.
func printSettings(c *cli.Context, doc settings.Document) error {
	w := c.App.Writer
	if flagBool(c, "json") {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	tw := tabwriter.NewWriter(termSafe(w), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, k := range docKeys(doc) {
		v, live := doc.Settings[k]
		src := string(doc.Sources[k])
		if !live {
			v, src = doc.Fixed[k], src+" (fixed: a restart changes it)"
		}
		text := settings.Text(v)
		if text == "" {
			text = emptyText(v)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k, text, src)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "version %s", doc.Version)
	if doc.Config != "" {
		fmt.Fprintf(w, " · config file %s", doc.Config)
		if !doc.WriteBack {
			io.WriteString(w, " (read only: start with --config to have changes written back)")
		}
	}
	fmt.Fprintln(w)
	for _, e := range doc.FileErrors {
		fmt.Fprintln(termSafe(w), "file error (the settings stay as they were): "+e)
	}
	return nil
}

// settingsSet applies KEY=VALUE... in one change.
func settingsSet(c *cli.Context, cl *settings.Client, args []string) error {
	if len(args) == 0 {
		return cli.Exit(settingsName+" set: want KEY=VALUE... (e.g. gateway=http://127.0.0.1:3128 cooldown-ms=10000)", 2)
	}
	changes := map[string]any{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return cli.Exit(fmt.Sprintf("%s set: %q is not KEY=VALUE", settingsName, a), 2)
		}
		if v == "null" {
			changes[k] = nil
		} else {
			changes[k] = v
		}
	}
	ctx, cancel := settingsCtx(c)
	defer cancel()
	doc, err := cl.Set(ctx, changes)
	if err != nil {
		return settingsFail(cl, err)
	}
	keys := make([]string, 0, len(changes))
	for k := range changes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return reportChange(c, doc, keys)
}

// settingsGatewayEdit is gateway add (add true) or gateway remove.
func settingsGatewayEdit(add bool) func(*cli.Context, *settings.Client, []string) error {
	verb := map[bool]string{true: "add", false: "remove"}[add]
	return func(c *cli.Context, cl *settings.Client, args []string) error {
		if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
			return cli.Exit(fmt.Sprintf("%s gateway %s: want one URL (e.g. http://127.0.0.1:3128)", settingsName, verb), 2)
		}
		ctx, cancel := settingsCtx(c)
		defer cancel()
		edit := cl.RemoveGateway
		if add {
			edit = cl.AddGateway
		}
		doc, ed, err := edit(ctx, strings.TrimSpace(args[0]))
		var re *settings.RemoteError
		if errors.As(err, &re) && re.Status == 0 {
			return cli.Exit(settingsName+" gateway "+verb+": "+oneLine(err.Error()), 2)
		}
		if err != nil {
			return settingsFail(cl, err)
		}
		if !flagBool(c, "json") {
			w := termSafe(c.App.Writer)
			if ed.Verb == "unchanged" {
				fmt.Fprintf(w, "gateway[%d] %s is already a gateway as given: nothing changed\n", ed.Index, ed.Old[0])
				return nil
			}
			fmt.Fprintln(w, gatewayEditLine(ed))
		}
		return reportChange(c, doc, []string{settings.Gateway})
	}
}

// gatewayEditLine says what gateway add or remove did, passwords masked:
// "added gateway[2] URL", "replaced gateway[1] OLD with NEW" (the proxy
// keeps one gateway per host:port, so an add of a listed host:port
// changes that one in place), "removed gateway[0] URL".
func gatewayEditLine(ed settings.GatewayEdit) string {
	switch ed.Verb {
	case "replaced":
		line := fmt.Sprintf("replaced gateway[%d] %s with %s", ed.Index, ed.Old[0], ed.New)
		if len(ed.Old) > 1 {
			line += fmt.Sprintf(" (and removed %s of the same host:port, which the proxy never used)", strings.Join(ed.Old[1:], ", "))
		}
		return line
	case "removed":
		return fmt.Sprintf("removed gateway[%d] %s", ed.Index, strings.Join(ed.Old, ", "))
	}
	return fmt.Sprintf("added gateway[%d] %s", ed.Index, ed.New)
}

// settingsGatewayList prints the gateways in order, one a line, masked as
// the document shows them; none prints nothing to a pipe and "(none)" on a
// terminal, as `settings get gateway` does.
func settingsGatewayList(c *cli.Context, cl *settings.Client, args []string) error {
	if len(args) > 0 {
		return cli.Exit(fmt.Sprintf("%s gateway list: unexpected argument %q: list takes no arguments", settingsName, args[0]), 2)
	}
	ctx, cancel := settingsCtx(c)
	defer cancel()
	doc, err := cl.Get(ctx)
	if err != nil {
		return settingsFail(cl, err)
	}
	l, _ := doc.Settings[settings.Gateway].([]any)
	if flagBool(c, "json") {
		if l == nil {
			l = []any{}
		}
		return json.NewEncoder(c.App.Writer).Encode(l)
	}
	if len(l) == 0 {
		if isTerminal(c.App.Writer) {
			fmt.Fprintln(c.App.Writer, "(none)")
		}
		return nil
	}
	w := termSafe(c.App.Writer)
	for _, g := range l {
		fmt.Fprintln(w, settings.Text(g))
	}
	return nil
}

// reportChange prints the keys' values after a change, how it was
// written back to the config file, and a note for each key a flag or its
// variable set at start.
func reportChange(c *cli.Context, doc settings.Document, keys []string) error {
	if flagBool(c, "json") {
		return printSettings(c, doc)
	}
	w := termSafe(c.App.Writer)
	for _, k := range keys {
		text := settings.Text(doc.Settings[k])
		if text == "" {
			text = emptyText(doc.Settings[k])
		}
		fmt.Fprintf(w, "%s = %s (%s)\n", k, text, doc.Sources[k])
	}
	switch s := doc.Saved; {
	case s != nil && s.Error != "":
		fmt.Fprintf(w, "applied; not written to %s: %s\n", s.Path, s.Error)
	case s != nil:
		fmt.Fprintf(w, "applied and written to %s (mode %s)\n", s.Path, s.Mode)
	case doc.Config != "" && doc.WriteBack:
		// A change is written back whenever it changed something; a value
		// already in effect from the API changes nothing, so the file
		// stays as it is.
		fmt.Fprintf(w, "no change: already in effect (%s left as it is)\n", doc.Config)
	default:
		fmt.Fprintln(w, "applied (not written to a config file: start with --config to keep changes)")
	}
	for _, k := range keys {
		if by := startSetting(doc, k); by != "" {
			fmt.Fprintf(w, "note: %s is also set by %s at start; a restart brings that value back\n", k, by)
		}
	}
	return nil
}

// startSetting is the flag ("--cooldown-ms") or environment variable
// ("COOLDOWN_MS") that set key when the instance started, as the
// document's start_sources tell it, else "": a restart gives the key that
// value again whatever a change set (docs/flags.md). An instance whose
// document has no start_sources (an older one) gets no note.
func startSetting(doc settings.Document, key string) string {
	switch doc.StartSources[key] {
	case settings.SourceFlag:
		if f := doc.StartFlags[key]; f != "" {
			return f // the flag given: --no-verify-tls
		}
		return "--" + key
	case settings.SourceEnv:
		if k, ok := settings.Lookup(key); ok {
			return k.Env
		}
	}
	return ""
}

// settingsToken prints the control token and the status page link with
// it (the fragment never leaves the browser).
func settingsToken(c *cli.Context, cl *settings.Client, args []string) error {
	if len(args) > 0 {
		return cli.Exit(fmt.Sprintf("%s token: unexpected argument %q: token takes no arguments", settingsName, args[0]), 2)
	}
	if cl.Token == "" {
		return cli.Exit(settingsName+" token: "+cl.Addr+" has no control token in the registry: it was given with --control-token at start", 1)
	}
	fmt.Fprintln(c.App.Writer, cl.Token)
	fmt.Fprintf(c.App.Writer, "page: http://%s%s#token=%s\n", cl.Addr, statusdoc.PagePath, cl.Token)
	return nil
}
