package cli

import (
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/dual-proxy/dual-proxy/envrewrite"
)

// Values completion offers for flags and positional arguments (SPEC
// LIS-5): fixed lists, and the pool and model names of the configuration
// file, read cheaply (keys only, no validation, no key variables) so that a
// broken or missing file completes nothing instead of failing the shell.

// flagValues are the fixed values of flags that take one of a few words.
var flagValues = map[string][]string{
	fLogLevel:  {"debug", "info", "warn", "error"},
	fLogFormat: {"text", "json"},
}

// configFlagValues are the flags whose value is a name from the
// configuration file.
var configFlagValues = map[string]func(configNames, []string) []string{
	fPool: func(n configNames, _ []string) []string { return n.pools },
}

// configArgValues are the commands whose positional arguments are names
// from the configuration file: argument i given the arguments before it.
var configArgValues = map[string]func(n configNames, pos []string) []string{
	"pool test": func(n configNames, pos []string) []string {
		switch len(pos) {
		case 0:
			return n.pools
		case 1:
			return n.models[pos[0]]
		}
		return nil
	},
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
// line words (--config FILE or --config=FILE), else DUAL_PROXY_CONFIG, else
// the default path name. Any problem yields no names.
func readConfigNames(words, env []string) configNames {
	path, _ := envrewrite.Get(env, "DUAL_PROXY_CONFIG")
	for i, w := range words {
		if w == "--"+fConfig && i+1 < len(words) {
			path = words[i+1]
		} else if v, ok := strings.CutPrefix(w, "--"+fConfig+"="); ok {
			path = v
		}
	}
	if path == "" {
		path = defaultConfigFile(env)
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
