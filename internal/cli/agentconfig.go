package cli

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

// agentOverride is one setting in an agent's file that undoes the launcher.
type agentOverride struct {
	File string // path as read
	Key  string // e.g. "env.HTTPS_PROXY", "model_provider"
}

// agentName is the agent an argv[0] runs ("claude", "codex", "gemini"),
// or "" for other commands.
func agentName(argv0 string) string {
	base := strings.ToLower(filepath.Base(argv0))
	base = strings.TrimSuffix(base, ".exe")
	switch base {
	case "claude", "codex", "gemini":
		return base
	}
	return ""
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

// agentConfigFiles are the files agent reads that can undo the launcher,
// for the environment env and working directory cwd.
func agentConfigFiles(agent string, env []string, cwd string) []string {
	home, _ := envrewrite.Get(env, "HOME")
	if home == "" {
		home, _ = envrewrite.Get(env, "USERPROFILE")
	}
	switch agent {
	case "claude":
		dir := filepath.Join(home, ".claude")
		if d, ok := envrewrite.Get(env, "CLAUDE_CONFIG_DIR"); ok && d != "" {
			dir = d
		}
		files := []string{claudeManagedSettings(runtime.GOOS), filepath.Join(dir, "settings.json")}
		if cwd != "" {
			files = append(files, filepath.Join(cwd, ".claude", "settings.json"), filepath.Join(cwd, ".claude", "settings.local.json"))
		}
		return files
	case "codex":
		dir := filepath.Join(home, ".codex")
		if d, ok := envrewrite.Get(env, "CODEX_HOME"); ok && d != "" {
			dir = d
		}
		return []string{filepath.Join(dir, "config.toml")}
	}
	return nil
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

// findAgentOverrides reads agent's files (read is os.ReadFile; missing
// files are skipped) and returns every setting that undoes the launcher.
// launcherSet are the variables the launcher set or changed for the child.
func findAgentOverrides(agent string, env []string, cwd string, launcherSet map[string]bool, poolWithoutPresets bool, read func(string) ([]byte, error)) []agentOverride {
	var out []agentOverride
	for _, f := range agentConfigFiles(agent, env, cwd) {
		data, err := read(f)
		if err != nil {
			continue
		}
		var keys []string
		switch agent {
		case "claude":
			keys = claudeOverrides(data, launcherSet)
		case "codex":
			keys = codexOverrides(data, poolWithoutPresets)
		}
		for _, k := range keys {
			out = append(out, agentOverride{File: f, Key: k})
		}
	}
	return out
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
func overrideWarning(prog, agent string, o agentOverride, home string) string {
	f := o.File
	if home != "" && strings.HasPrefix(f, home+string(filepath.Separator)) {
		f = "~" + f[len(home):]
	}
	what := "replaces the value the launcher set"
	if o.Key == "model_provider" {
		what = "decides codex's endpoint over the pool's OPENAI_BASE_URL (drop --no-agent-presets, or remove it)"
	}
	return fmt.Sprintf("%s: warning: %s sets %s, which %s: %s will not use dual-proxy as launched", prog, f, o.Key, what, agent)
}

// warnAgentOverrides writes one warning line per override to stderr (before
// the child owns the terminal) and to the log.
func warnAgentOverrides(prog string, s *Settings, child, argv []string, warn func(string)) {
	if len(argv) == 0 {
		return
	}
	agent := agentName(argv[0])
	if agent == "" {
		return
	}
	cwd, _ := os.Getwd()
	home, _ := envrewrite.Get(s.Env, "HOME")
	set := changedVars(s.Env, child)
	for _, o := range findAgentOverrides(agent, s.Env, cwd, set, s.PoolName != "" && !s.AgentPresets, os.ReadFile) {
		warn(overrideWarning(prog, agent, o, home))
	}
}
