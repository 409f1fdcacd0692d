// Package agentconf finds, in the configuration files coding agents read
// at start, the settings that undo what the launcher set for the child
// (said at start, naming file and key, exactly when the agent
// will bypass the launcher, never otherwise). What each supported agent
// reads, as the real CLIs were seen to behave:
//
//   - Claude Code: the "env" object of its managed settings
//     (claudeManagedSettings), ~/.claude/settings.json
//     ($CLAUDE_CONFIG_DIR/settings.json), .claude/settings.json and
//     .claude/settings.local.json in the working directory. Its values are
//     applied over the process environment, so a key the launcher set is
//     replaced: an "ANTHROPIC_BASE_URL" there bypasses the pool. Which
//     proxy variable it obeys is in its table (proxyReads): only a
//     lower-case "https_proxy", or a no_proxy of either spelling that adds
//     a host, sends it past the launcher.
//   - Codex: $CODEX_HOME/.env (default ~/.codex/.env) is loaded over its
//     environment at start. By its table (proxyReads) an upper-case
//     HTTPS_PROXY or HTTP_PROXY there, or a NO_PROXY adding a host,
//     bypasses the launcher; the lower-case spellings and ALL_PROXY are
//     shadowed by what the launcher set. $CODEX_HOME/config.toml's
//     top-level model_provider decides the endpoint over OPENAI_BASE_URL;
//     in pool mode the launcher's -c overrides win over it, unless
//     --no-agent-presets is given. The launcher does not neutralise the
//     .env file (pointing CODEX_HOME at a copy would leave the sessions,
//     auth and history Codex writes there behind): the warning names the
//     file and the key to remove.
//   - Qwen Code: the top-level "proxy" of its settings files
//     (/etc/qwen-code/settings.json or $QWEN_CODE_SYSTEM_SETTINGS_PATH,
//     ~/.qwen/settings.json or $QWEN_HOME/settings.json, .qwen/settings.json
//     in the working directory) wins over the proxy variables.
//   - Gemini CLI (0.61): .gemini/.env or .env from the working directory up,
//     else ~/.gemini/.env or ~/.env; it sets only variables that are not
//     already set, and its proxy comes only from the environment, so nothing
//     it reads undoes the launcher (no warning).
package agentconf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/dual-proxy/dual-proxy/envrewrite"
)

// Launch is what a launcher gives its child, as the checks read it.
type Launch struct {
	// Parent is the environment the launcher started from, Child the one
	// it gives the child.
	Parent, Child []string
	// PoolWithoutPresets: pool mode with --no-agent-presets (the launcher
	// adds no agent-specific settings).
	PoolWithoutPresets bool
	// Agent is the agent the launcher runs whatever its executable is
	// called ("claude" for claude-dual-proxy, whose --command may be a
	// wrapper script); "" means the agent argv[0] names, if any.
	Agent string
	// Pinned: the launcher passed the environment it set through the
	// agent's command-line settings layer, which wins over the user's and
	// the project's files (Claude Code's --settings): only the files above
	// that layer (Claude Code's managed settings) can still undo it.
	Pinned bool
}

// input is what a check reads beside the file: the variables the launcher
// set, changed or removed for the child (changedVars), the child's
// environment, the OS's rule for variable names, and the launch.
type input struct {
	launcherSet map[string]bool
	child       map[string]string // exact names
	names       envrewrite.Names
	launch      Launch
}

// set reports whether the launcher set, changed or removed the variable
// k, under the OS's rule for names (any spelling on Windows).
func (in input) set(k string) bool {
	if in.launcherSet[k] {
		return true
	}
	if in.names.FoldCase {
		for n := range in.launcherSet {
			if strings.EqualFold(n, k) {
				return true
			}
		}
	}
	return false
}

// finding is one key of a file that undoes the launcher: the key as shown
// ("env.https_proxy", "HTTPS_PROXY"), what it does and what to do.
type finding struct {
	key, what, fix string
}

// source is one kind of file an agent reads: where it is for an
// environment and working directory, and the keys in its contents that
// undo the launcher.
type source struct {
	files func(env []string, cwd string) []string
	check func(data []byte, in input) []finding
}

// agents are the agents whose files are checked, by executable name (lower
// case, without ".exe"), each with the files it reads in the order it
// reads them. A new check is a source of its agent: its files and the keys
// that undo the launcher. gemini reads nothing that can (see the package
// comment).
var agents = map[string][]source{
	"claude": {{files: claudeSettingsFiles, check: claudeOverrides}},
	"codex": {
		{files: func(env []string, _ string) []string { return []string{filepath.Join(codexHome(env), ".env")} }, check: codexDotEnvOverrides},
		{files: func(env []string, _ string) []string { return []string{filepath.Join(codexHome(env), "config.toml")} }, check: codexOverrides},
	},
	"qwen":   {{files: qwenSettingsFiles, check: qwenOverrides}},
	"gemini": nil,
}

// override is one setting in an agent's file that undoes the launcher.
type override struct {
	File string // path as read
	finding
}

// Warnings are the one-line warnings, for launcher prog, of every setting
// in the files of the agent argv runs (none for another command) that
// undoes what the launch set, files read from the working directory and
// the parent's home; the home directory is shown as "~" (SPEC OPS-8).
func Warnings(prog string, argv []string, l Launch) []string {
	if len(argv) == 0 {
		return nil
	}
	agent := agentName(argv[0])
	if _, ok := agents[l.Agent]; ok && l.Agent != "" {
		agent = l.Agent
	}
	if agent == "" {
		return nil
	}
	cwd, _ := os.Getwd()
	home, _ := envrewrite.Get(l.Parent, "HOME")
	var out []string
	for _, o := range findOverrides(agent, cwd, l, envrewrite.Native, os.ReadFile) {
		out = append(out, overrideWarning(prog, agent, o, home))
	}
	return out
}

// agentName is the agent an argv[0] runs ("claude", "codex", "qwen",
// "gemini"), or "" for other commands.
func agentName(argv0 string) string {
	base := strings.TrimSuffix(strings.ToLower(filepath.Base(argv0)), ".exe")
	if _, ok := agents[base]; ok {
		return base
	}
	return ""
}

// findOverrides reads agent's files for the launch l and working directory
// cwd under the name rule names (read is os.ReadFile; missing files are
// skipped) and returns every setting that undoes the launcher.
func findOverrides(agent, cwd string, l Launch, names envrewrite.Names, read func(string) ([]byte, error)) []override {
	in := input{launcherSet: changedVars(l.Parent, l.Child), child: envMap(l.Child), names: names, launch: l}
	var out []override
	for _, src := range agents[agent] {
		for _, f := range src.files(l.Parent, cwd) {
			if l.Pinned && agent == "claude" && f != claudeManagedSettings(runtime.GOOS) {
				continue // below the launcher's --settings layer
			}
			data, err := read(f)
			if err != nil {
				continue
			}
			for _, k := range src.check(data, in) {
				out = append(out, override{File: f, finding: k})
			}
		}
	}
	return out
}

// home is the user's home directory in env (HOME, else USERPROFILE).
func home(env []string) string {
	h, _ := envrewrite.Get(env, "HOME")
	if h == "" {
		h, _ = envrewrite.Get(env, "USERPROFILE")
	}
	return h
}

// claudeSettingsFiles are the Claude Code settings files whose "env" wins
// over the process environment: the managed settings
// (claudeManagedSettings), the user's ($CLAUDE_CONFIG_DIR, else
// ~/.claude) and the project's in cwd.
func claudeSettingsFiles(env []string, cwd string) []string {
	dir := filepath.Join(home(env), ".claude")
	if d, ok := envrewrite.Get(env, "CLAUDE_CONFIG_DIR"); ok && d != "" {
		dir = d
	}
	files := []string{claudeManagedSettings(runtime.GOOS), filepath.Join(dir, "settings.json")}
	if cwd != "" {
		files = append(files, filepath.Join(cwd, ".claude", "settings.json"), filepath.Join(cwd, ".claude", "settings.local.json"))
	}
	return files
}

// codexHome is Codex's configuration directory: $CODEX_HOME, else ~/.codex.
func codexHome(env []string) string {
	if d, ok := envrewrite.Get(env, "CODEX_HOME"); ok && d != "" {
		return d
	}
	return filepath.Join(home(env), ".codex")
}

// qwenSettingsFiles are Qwen Code's settings files, lowest precedence
// first: the user's ($QWEN_HOME, else ~/.qwen), the project's in cwd, the
// system's ($QWEN_CODE_SYSTEM_SETTINGS_PATH, else qwenSystemSettings).
func qwenSettingsFiles(env []string, cwd string) []string {
	dir := filepath.Join(home(env), ".qwen")
	if d, ok := envrewrite.Get(env, "QWEN_HOME"); ok && d != "" {
		dir = d
	}
	files := []string{filepath.Join(dir, "settings.json")}
	if cwd != "" {
		files = append(files, filepath.Join(cwd, ".qwen", "settings.json"))
	}
	sys := qwenSystemSettings(runtime.GOOS)
	if p, ok := envrewrite.Get(env, "QWEN_CODE_SYSTEM_SETTINGS_PATH"); ok && p != "" {
		sys = p
	}
	return append(files, sys)
}

// QwenSettingsFiles are the settings files Qwen Code reads for the
// environment env and working directory cwd (user, project, system), for
// the pool preset's check of a chosen auth type.
func QwenSettingsFiles(env []string, cwd string) []string { return qwenSettingsFiles(env, cwd) }

// claudeManagedSettings is Claude Code's administrator settings file on
// goos (a runtime.GOOS value); its env wins over the user's.
func claudeManagedSettings(goos string) string {
	switch goos {
	case "darwin":
		return "/Library/Application Support/ClaudeCode/managed-settings.json"
	case "windows":
		return `C:\ProgramData\ClaudeCode\managed-settings.json`
	}
	return "/etc/claude-code/managed-settings.json"
}

// qwenSystemSettings is Qwen Code's system settings file on goos.
func qwenSystemSettings(goos string) string {
	switch goos {
	case "darwin":
		return "/Library/Application Support/QwenCode/settings.json"
	case "windows":
		return `C:\ProgramData\qwen-code\settings.json`
	}
	return "/etc/qwen-code/settings.json"
}

// proxyRead is one row of an agent's table of proxy variables: for its
// traffic, the variables it reads, exact names in the order it reads
// them. The first one set (not empty) decides, unless joined: then every
// one is read and their values joined. A noProxy row holds host lists
// (NO_PROXY): a value there bypasses the launcher only by naming a host
// the launcher's does not.
type proxyRead struct {
	traffic string
	vars    []string
	noProxy bool
	joined  bool
	source  string
	// what, when set, is the warning's account of a bypass by this row
	// (traffic other than the agent's own).
	what string
}

// proxyReads are, per agent (executable name), the proxy variables it
// obeys for which traffic, read from the installed CLIs. A key
// of an agent's file in a row is a bypass exactly when, with the file's
// values applied over the launcher's environment, the agent's read of that
// row comes from the file: the first set variable of the row is the
// file's key with a value other than the launcher's, or, in a no-proxy row,
// the file names a host the launcher's list does not. An agent without a
// table here reads no proxy variables from its files.
var proxyReads = map[string][]proxyRead{
	"claude": {
		{traffic: "every request, https:// and http:// URLs alike (the model call among them)",
			vars:   []string{"https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"},
			source: "Claude Code 2.1.332: its proxy is the first of https_proxy, HTTPS_PROXY, http_proxy, HTTP_PROXY that is set, for every URL"},
		{traffic: "hosts it connects to directly", vars: []string{"no_proxy", "NO_PROXY"}, noProxy: true, joined: true,
			source: "Claude Code 2.1.332 joins no_proxy and NO_PROXY when they differ"},
	},
	"codex": {
		{traffic: "https:// requests (the model call to a provider)", vars: []string{"HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"},
			source: "Codex 0.171's HTTP client (reqwest's system proxy): upper case first, ALL_PROXY only when neither spelling is set"},
		{traffic: "http:// requests (the model call to a local pool)", vars: []string{"HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"},
			source: "as for https://"},
		{traffic: "hosts it connects to directly", vars: []string{"NO_PROXY", "no_proxy"}, noProxy: true,
			source: "reqwest's system proxy: NO_PROXY, else no_proxy"},
		// The commands Codex runs inherit what it loaded: git (libcurl)
		// fetched github.com through a lower-case https_proxy of the .env
		// while the model call went through the launcher.
		{traffic: "https:// requests of the commands it runs (git, curl)", vars: []string{"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"},
			source: "libcurl: https_proxy before HTTPS_PROXY; seen with git under Codex 0.171",
			what:   "Codex loads over the launcher's environment at start, and the commands it runs (git, curl) read for https:// URLs before the launcher's HTTPS_PROXY"},
		{traffic: "http:// requests of the commands it runs (git, curl)", vars: []string{"http_proxy", "all_proxy", "ALL_PROXY"},
			source: "libcurl reads http_proxy only in lower case",
			what:   "Codex loads over the launcher's environment at start, and the commands it runs (git, curl) read for http:// URLs"},
	},
}

// proxyBypasses are the keys of file (an agent's file: names to values, as
// the agent applies them over its environment) that send agent past the
// launcher by its table (proxyReads), given the child's environment child
// and the OS's name rule, sorted.
func proxyBypasses(agent string, file map[string]string, child map[string]string, names envrewrite.Names) []string {
	found := proxyBypassRows(agent, file, child, names)
	out := make([]string, 0, len(found))
	for k := range found {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// proxyBypassRows is proxyBypasses with, for each key, the first row of
// the agent's table it bypasses the launcher by.
func proxyBypassRows(agent string, file map[string]string, child map[string]string, names envrewrite.Names) map[string]proxyRead {
	fold := func(k string) string {
		if names.FoldCase {
			return strings.ToUpper(k)
		}
		return k
	}
	launched, fromFile := map[string]string{}, map[string]string{}
	fileKey := map[string]string{} // folded name → the key as the file spells it
	for k, v := range child {
		launched[fold(k)] = v
	}
	for k, v := range file {
		fromFile[fold(k)] = v
		fileKey[fold(k)] = k
	}
	found := map[string]proxyRead{}
	mark := func(k string, row proxyRead) {
		if _, ok := found[k]; !ok {
			found[k] = row
		}
	}
	for _, row := range proxyReads[agent] {
		var vars []string
		seen := map[string]bool{}
		for _, v := range row.vars {
			if v = fold(v); !seen[v] {
				seen[v] = true
				vars = append(vars, v)
			}
		}
		differs := func(v, val string) bool {
			if row.noProxy {
				return addsHosts(val, launched[v])
			}
			return val != launched[v]
		}
		for _, v := range vars {
			val, inFile := fromFile[v]
			if row.joined {
				if inFile && differs(v, val) {
					mark(fileKey[v], row)
				}
				continue
			}
			if !inFile {
				val = launched[v]
			}
			if val == "" {
				continue
			}
			if inFile && differs(v, val) {
				mark(fileKey[v], row)
			}
			break
		}
	}
	return found
}

// addsHosts reports whether the no-proxy list file names an entry (comma
// separated, case and spaces ignored) that the list launched does not.
func addsHosts(file, launched string) bool {
	have := map[string]bool{}
	for _, e := range strings.Split(launched, ",") {
		have[strings.ToLower(strings.TrimSpace(e))] = true
	}
	for _, e := range strings.Split(file, ",") {
		if e = strings.ToLower(strings.TrimSpace(e)); e != "" && !have[e] {
			return true
		}
	}
	return false
}

// claudeOverrides are the keys of a Claude Code settings file's "env"
// object that send Claude Code past the launcher, as "env.NAME", sorted:
// a proxy variable by Claude Code's table (proxyReads: a lower-case
// https_proxy, not http_proxy nor an upper-case spelling the launcher's
// lower-case one shadows), and every other key that replaces a variable
// the launcher set or removed. A file that is not JSON yields none
// (Claude Code reports it itself).
func claudeOverrides(data []byte, in input) []finding {
	var doc struct {
		Env map[string]any `json:"env"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	proxy := map[string]string{}
	var keys []string
	for k, v := range doc.Env {
		if isProxyVar(k) {
			s, _ := v.(string)
			proxy[k] = s
			continue
		}
		if in.set(k) {
			keys = append(keys, k)
		}
	}
	keys = append(keys, proxyBypasses("claude", proxy, in.child, in.names)...)
	sort.Strings(keys)
	out := make([]finding, 0, len(keys))
	for _, k := range keys {
		out = append(out, finding{key: "env." + k, what: "Claude Code applies over the launcher's value", fix: "remove the key"})
	}
	return out
}

// isProxyVar reports whether k is a proxy variable in any spelling
// (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY), which the agents' tables
// (proxyReads) decide about.
func isProxyVar(k string) bool {
	switch strings.ToUpper(k) {
	case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY":
		return true
	}
	return false
}

// codexDotEnvOverrides are the keys of Codex's .env file (KEY=VALUE lines,
// "export " allowed, # comments, optional quotes) that send Codex past the
// launcher by its table (proxyReads): HTTPS_PROXY and HTTP_PROXY in upper
// case (the launcher's upper-case spelling shadows a lower-case one; on
// Windows either), a NO_PROXY naming a host the launcher's does not; never
// ALL_PROXY, which Codex reads only when neither is set. Sorted.
func codexDotEnvOverrides(data []byte, in input) []finding {
	file := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		line = strings.TrimSpace(strings.TrimPrefix(line, "export "))
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || strings.HasPrefix(k, "#") || !isProxyVar(k) {
			continue
		}
		file[k] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	rows := proxyBypassRows("codex", file, in.child, in.names)
	var out []finding
	for _, k := range proxyBypasses("codex", file, in.child, in.names) {
		what := "Codex loads over the launcher's environment at start"
		if rows[k].what != "" {
			what = rows[k].what
		}
		out = append(out, finding{key: k, what: what, fix: "remove it from the file"})
	}
	return out
}

// codexOverrides are the keys of a Codex config.toml that win over the
// pool's OPENAI_BASE_URL: model_provider, when the launcher adds no -c
// overrides (pool mode with --no-agent-presets).
func codexOverrides(data []byte, in input) []finding {
	if !in.launch.PoolWithoutPresets {
		return nil
	}
	var doc map[string]any
	if toml.Unmarshal(data, &doc) != nil {
		return nil
	}
	if _, ok := doc["model_provider"]; ok {
		return []finding{{key: "model_provider", what: "decides codex's endpoint over the pool's OPENAI_BASE_URL", fix: "drop --no-agent-presets, or remove it"}}
	}
	return nil
}

// qwenOverrides is the top-level "proxy" of a Qwen Code settings file,
// which Qwen Code takes over the proxy variables. A file that is not JSON
// yields none.
func qwenOverrides(data []byte, _ input) []finding {
	var doc map[string]any
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	if p, ok := doc["proxy"].(string); ok && p != "" {
		return []finding{{key: "proxy", what: "Qwen Code takes over the launcher's proxy variables", fix: "remove the key"}}
	}
	return nil
}

// envMap is env as a map of exact names to values.
func envMap(env []string) map[string]string {
	out := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// changedVars are the variables whose value in child differs from parent
// (set, changed or removed by the launcher).
func changedVars(parent, child []string) map[string]bool {
	p, c := envMap(parent), envMap(child)
	set := map[string]bool{}
	for k, v := range c {
		if pv, ok := p[k]; !ok || pv != v {
			set[k] = true
		}
	}
	for k := range p {
		if _, ok := c[k]; !ok {
			set[k] = true
		}
	}
	return set
}

// overrideWarning is the one-line warning for o, the home directory shown
// as "~": the file, the key, what it does, that the agent will not use the
// launcher and what to do.
func overrideWarning(prog, agent string, o override, home string) string {
	f := o.File
	if home != "" && strings.HasPrefix(f, home+string(filepath.Separator)) {
		f = "~" + f[len(home):]
	}
	return fmt.Sprintf("%s: warning: %s sets %s, which %s: %s will not use dual-proxy as launched (%s)", prog, f, o.key, o.what, agent, o.fix)
}
