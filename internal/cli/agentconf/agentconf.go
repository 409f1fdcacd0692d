// Package agentconf finds, in the configuration files coding agents read
// at start, the settings that undo what the launcher set for the child.
// Agents read their own configuration files at start, and some of those
// replace variables the launcher set for the child (nothing may
// silently undo the launcher). What each supported agent reads:
//
//   - Claude Code: the "env" object of its managed settings
//     (claudeManagedSettings), ~/.claude/settings.json
//     ($CLAUDE_CONFIG_DIR/settings.json), .claude/settings.json and
//     .claude/settings.local.json in the working directory. Its values win
//     over the process environment, so an "HTTPS_PROXY" there sends claude
//     past the launcher (or to a long-dead proxy: "connection refused"), and
//     an "ANTHROPIC_BASE_URL" there bypasses the pool.
//   - Codex: ~/.codex/config.toml ($CODEX_HOME). It has no proxy setting
//     (Codex follows HTTPS_PROXY); its top-level model_provider decides the
//     endpoint, over OPENAI_BASE_URL. In pool mode the launcher's -c
//     overrides win over it, unless --no-agent-presets is given.
//   - Gemini CLI (0.61): .gemini/.env or .env from the working directory up,
//     else ~/.gemini/.env or ~/.env; it sets only variables that are not
//     already set, and its proxy comes only from the environment, so nothing
//     it reads undoes the launcher (no warning).
package agentconf

import (
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
	// adds no agent-specific settings, SPEC POOL-20).
	PoolWithoutPresets bool
}

// input is what a check reads beside the file: the variables the launcher
// set, changed or removed for the child (changedVars), and the launch.
type input struct {
	launcherSet map[string]bool
	launch      Launch
}

// source is one kind of file an agent reads: where it is for an
// environment and working directory, the keys in its contents that undo
// the launcher, and what such a key does (for the warning).
type source struct {
	files func(env []string, cwd string) []string
	check func(data []byte, in input) []string
	what  string
}

// agents are the agents whose files are checked, by executable name (lower
// case, without ".exe"), each with the files it reads in the order it
// reads them. A new check is a source of its agent: its files, the keys
// that undo the launcher, what they do. gemini reads nothing that can (see
// the package comment).
var agents = map[string][]source{
	"claude": {{
		files: claudeSettingsFiles,
		check: func(data []byte, in input) []string { return claudeOverrides(data, in.launcherSet) },
		what:  "replaces the value the launcher set",
	}},
	"codex": {{
		files: func(env []string, _ string) []string { return []string{filepath.Join(codexHome(env), "config.toml")} },
		check: func(data []byte, in input) []string { return codexOverrides(data, in.launch.PoolWithoutPresets) },
		what:  "decides codex's endpoint over the pool's OPENAI_BASE_URL (drop --no-agent-presets, or remove it)",
	}},
	"gemini": nil,
}

// override is one setting in an agent's file that undoes the launcher.
type override struct {
	File string // path as read
	Key  string // e.g. "env.HTTPS_PROXY", "model_provider"
	What string // what the setting does (source.what)
}

// Warnings are the one-line warnings, for launcher prog, of every setting
// in the files of the agent argv runs (none for another command) that
// undoes what the launch set, files read from the working directory and
// the parent's home; the home directory is shown as "~".
func Warnings(prog string, argv []string, l Launch) []string {
	if len(argv) == 0 {
		return nil
	}
	agent := agentName(argv[0])
	if agent == "" {
		return nil
	}
	cwd, _ := os.Getwd()
	home, _ := envrewrite.Get(l.Parent, "HOME")
	var out []string
	for _, o := range findOverrides(agent, cwd, l, os.ReadFile) {
		out = append(out, overrideWarning(prog, agent, o, home))
	}
	return out
}

// agentName is the agent an argv[0] runs ("claude", "codex", "gemini"),
// or "" for other commands.
func agentName(argv0 string) string {
	base := strings.TrimSuffix(strings.ToLower(filepath.Base(argv0)), ".exe")
	if _, ok := agents[base]; ok {
		return base
	}
	return ""
}

// findOverrides reads agent's files for the launch l and working directory
// cwd (read is os.ReadFile; missing files are skipped) and returns every
// setting that undoes the launcher.
func findOverrides(agent, cwd string, l Launch, read func(string) ([]byte, error)) []override {
	in := input{launcherSet: changedVars(l.Parent, l.Child), launch: l}
	var out []override
	for _, src := range agents[agent] {
		for _, f := range src.files(l.Parent, cwd) {
			data, err := read(f)
			if err != nil {
				continue
			}
			for _, k := range src.check(data, in) {
				out = append(out, override{File: f, Key: k, What: src.what})
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

// claudeOverrides are the keys of a Claude Code settings file's "env"
// object that name a variable in launcherSet, as "env.NAME", sorted. A file
// that is not JSON yields none (Claude Code reports it itself).
func claudeOverrides(data []byte, launcherSet map[string]bool) []string {
	var doc struct {
		Env map[string]any `json:"env"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	var keys []string
	for k := range doc.Env {
		if launcherSet[k] {
			keys = append(keys, "env."+k)
		}
	}
	sort.Strings(keys)
	return keys
}

// codexOverrides are the keys of a Codex config.toml that win over the
// pool's OPENAI_BASE_URL: model_provider, when the launcher adds no -c
// overrides (pool mode with --no-agent-presets).
func codexOverrides(data []byte, poolWithoutPresets bool) []string {
	if !poolWithoutPresets {
		return nil
	}
	var doc map[string]any
	if toml.Unmarshal(data, &doc) != nil {
		return nil
	}
	if _, ok := doc["model_provider"]; ok {
		return []string{"model_provider"}
	}
	return nil
}

// changedVars are the variables whose value in child differs from parent
// (set, changed or removed by the launcher).
func changedVars(parent, child []string) map[string]bool {
	m := func(env []string) map[string]string {
		out := make(map[string]string, len(env))
		for _, kv := range env {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[k] = v
			}
		}
		return out
	}
	p, c := m(parent), m(child)
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
// as "~".
func overrideWarning(prog, agent string, o override, home string) string {
	f := o.File
	if home != "" && strings.HasPrefix(f, home+string(filepath.Separator)) {
		f = "~" + f[len(home):]
	}
	return fmt.Sprintf("%s: warning: %s sets %s, which %s: %s will not use dual-proxy as launched", prog, f, o.Key, o.What, agent)
}
