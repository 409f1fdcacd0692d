package cli

import (
	"encoding/json"
	"strings"
)

// claudePin makes the environment the launcher set the one Claude Code
// obeys, above the user's and the project's settings files (SPEC OPS-8):
// Claude Code applies the "env" of its settings over the process
// environment, and its --settings command-line layer sits above user,
// project and local settings (below only the administrator's managed
// settings). The launcher writes {"env": …} with every variable it set or
// changed for the child (child against parent; a removed one as "") to a
// private file (writePreset: it can hold the per-launch pool token, which
// the command line would show to other local users) and puts
// `--settings FILE` after argv[0]; the user's files are left untouched.
// An argv with its own --settings (before "--") is left as it is, and so
// is argv when the file cannot be written: pinned is false then, and the
// files are checked as before. cleanup removes the file.
func claudePin(parent, child, argv []string) (_ []string, cleanup func(), pinned bool) {
	noop := func() {}
	if len(argv) == 0 {
		return argv, noop, false
	}
	for _, a := range argv[1:] {
		if a == "--" {
			break
		}
		if a == "--settings" || strings.HasPrefix(a, "--settings=") {
			return argv, noop, false
		}
	}
	b, _ := json.Marshal(map[string]any{"env": launcherEnv(parent, child)})
	path, cleanup, err := writePreset(child, "claude-settings.json", b)
	if err != nil {
		return argv, noop, false
	}
	return append([]string{argv[0], "--settings", path}, argv[1:]...), cleanup, true
}

// launcherEnv are the variables whose value in child differs from parent
// (set or changed by the launcher), and "" for each variable of parent that
// child lacks (removed by it), by exact name.
func launcherEnv(parent, child []string) map[string]string {
	p, c := map[string]string{}, map[string]string{}
	for _, kv := range parent {
		if k, v, ok := strings.Cut(kv, "="); ok {
			p[k] = v
		}
	}
	for _, kv := range child {
		if k, v, ok := strings.Cut(kv, "="); ok {
			c[k] = v
		}
	}
	out := map[string]string{}
	for k, v := range c {
		if pv, ok := p[k]; !ok || pv != v {
			out[k] = v
		}
	}
	for k := range p {
		if _, ok := c[k]; !ok {
			out[k] = ""
		}
	}
	return out
}
