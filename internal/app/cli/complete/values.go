// Package complete is the shell completion of dual-proxy and
// claude-dual-proxy, from one walk of their command tree:
// bash and zsh ask the program (RequestFlag, answered by Spec.Answer),
// fish and PowerShell get static scripts written from the same walk
// (Spec.Fish, Spec.PowerShell), so no script can list a command or flag
// the program lacks, or miss one it has.
package complete

import (
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dual-proxy/dual-proxy/envrewrite"
)

// Spec is what completion offers beyond the names of the command tree.
type Spec struct {
	// Args are the values of a command's first positional argument, by
	// command name ("completion": the shells).
	Args map[string][]string
	// Flags are the fixed values of flags that take one of a few words, by
	// flag name.
	Flags map[string][]string
	// PoolFlag is the flag whose value is a pool name from the
	// configuration file; PoolTest the command path ("pool test") whose
	// arguments are a pool name and one of that pool's models.
	PoolFlag, PoolTest string
	// ConfigFlag and ConfigEnv name the configuration file on the command
	// line and in the environment; DefaultConfig is its path otherwise.
	ConfigFlag, ConfigEnv string
	DefaultConfig         func(env []string) string
}

// Values completion offers for flags and positional arguments: fixed lists, and
// the pool and model names of the configuration file, read cheaply (keys only,
// no validation, no key variables) so that a broken or missing file completes
// nothing instead of failing the shell.

// configFlag is how the value of flag name is read from the configuration
// file's names, nil for a flag whose value is no such name.
func (s *Spec) configFlag(name string) func(configNames, []string) []string {
	if name == "" || name != s.PoolFlag {
		return nil
	}
	return func(n configNames, _ []string) []string { return n.pools }
}

// configArgs is how the positional arguments of the command at path are
// read from the configuration file's names (argument i given the arguments
// before it), nil for a command whose arguments are no such names.
func (s *Spec) configArgs(path string) func(n configNames, pos []string) []string {
	if path == "" || path != s.PoolTest {
		return nil
	}
	return func(n configNames, pos []string) []string {
		switch len(pos) {
		case 0:
			return n.pools
		case 1:
			return n.models[pos[0]]
		}
		return nil
	}
}

// configNames are the names a configuration file defines, in file order.
type configNames struct {
	pools, channels []string
	// models are each pool's unified model ids.
	models map[string][]string
}

// maxCompletionConfig bounds the file completion reads (bytes): a TAB must
// stay instant.
const maxCompletionConfig = 1 << 20

// readConfigNames reads the names of the configuration file the command
// line words name (--config FILE or --config=FILE), else the environment's
// (ConfigEnv), else the default path. Any problem yields no names.
func (s *Spec) readConfigNames(words, env []string) configNames {
	path, _ := envrewrite.Get(env, s.ConfigEnv)
	for i, w := range words {
		if w == "--"+s.ConfigFlag && i+1 < len(words) {
			path = words[i+1]
		} else if v, ok := strings.CutPrefix(w, "--"+s.ConfigFlag+"="); ok {
			path = v
		}
	}
	if path == "" && s.DefaultConfig != nil {
		path = s.DefaultConfig(env)
	}
	f, err := os.Open(path)
	if err != nil {
		return configNames{}
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxCompletionConfig))
	var doc struct {
		Channels yaml.Node `yaml:"channels"`
		Pools    yaml.Node `yaml:"pools"`
	}
	if err != nil || yaml.Unmarshal(buf, &doc) != nil {
		return configNames{}
	}
	names := configNames{channels: mapKeys(&doc.Channels), pools: mapKeys(&doc.Pools), models: map[string][]string{}}
	for i := 0; doc.Pools.Kind == yaml.MappingNode && i+1 < len(doc.Pools.Content); i += 2 {
		var p struct {
			Models []struct {
				ID string `yaml:"id"`
			} `yaml:"models"`
		}
		if doc.Pools.Content[i+1].Decode(&p) != nil {
			continue
		}
		for _, m := range p.Models {
			if m.ID != "" {
				names.models[doc.Pools.Content[i].Value] = append(names.models[doc.Pools.Content[i].Value], m.ID)
			}
		}
	}
	return names
}

// mapKeys are the keys of a YAML mapping node (none for anything else).
func mapKeys(n *yaml.Node) []string {
	var keys []string
	for i := 0; n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; k != "" && !strings.ContainsAny(k, " \t\n") {
			keys = append(keys, k)
		}
	}
	return keys
}
