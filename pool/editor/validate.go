package editor

import (
	"errors"
	"fmt"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

// FieldError is one validation error at a YAML path (SPEC POOL-3), as the
// validate and save calls return them: the page shows each at its field.
type FieldError struct {
	// Path is the YAML path, e.g. "channels.a.base_url"; "" for the file.
	Path    string `json:"path"`
	Message string `json:"message"`
}

// reservedPools are pool ids the /pool/ routes already use.
var reservedPools = []string{"config", "status"}

// Validate parses data as config.ParseConfig does (getenv resolves
// api_key_env) and returns every error it can find, each with its YAML
// path; nil when the configuration is valid. ParseConfig stops at the
// first error, so after one each channel, the state and each pool is
// checked on its own (pools against stand-in channels), which finds the
// errors of every part; the first error is always the one ParseConfig
// itself reports, so a save never accepts what a reload would refuse.
func Validate(data []byte, getenv func(string) string) []FieldError {
	_, err := config.ParseConfig(data, getenv)
	if err == nil {
		return poolIDErrors(data)
	}
	errs := []FieldError{fieldError(err)}
	doc, perr := parseDoc(data)
	if perr != nil {
		return errs
	}
	add := func(part []byte) {
		if _, err := config.ParseConfig(part, getenv); err != nil {
			if fe := fieldError(err); !slices.Contains(errs, fe) {
				errs = append(errs, fe)
			}
		}
	}
	root := doc.Content[0]
	var chanIDs, apis []string
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "channels":
			for j := 0; v.Kind == yaml.MappingNode && j+1 < len(v.Content); j += 2 {
				add(docOf(mapOf("channels", mapOf(v.Content[j].Value, v.Content[j+1]))))
				chanIDs = append(chanIDs, v.Content[j].Value)
				api := "anthropic"
				if a := mapValue(v.Content[j+1], "api"); a != nil && slices.Contains(config.ChannelAPIs, a.Value) {
					api = a.Value
				}
				apis = append(apis, api)
			}
		case "pools":
		default:
			add(docOf(mapOf(k.Value, v)))
		}
	}
	pools := mapValue(root, "pools")
	for j := 0; pools != nil && pools.Kind == yaml.MappingNode && j+1 < len(pools.Content); j += 2 {
		add(poolAlone(pools, j, chanIDs, apis))
	}
	return append(errs, poolIDErrors(data)...)
}

// poolAlone is a document with pool j of pools, stand-ins for every channel
// (valid, with a key) and one-member stand-ins for the other pools (for the
// "a pool cannot contain a pool" rule).
func poolAlone(pools *yaml.Node, j int, chanIDs, apis []string) []byte {
	chans := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i, id := range chanIDs {
		chans.Content = append(chans.Content, scalar(id), mapOf("api", scalar(apis[i]), "base_url", scalar("http://127.0.0.1:1"), "api_key", scalar("stand-in")))
	}
	ps := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(pools.Content); i += 2 {
		v := pools.Content[i+1]
		if i != j {
			if len(chanIDs) == 0 || slices.Contains(chanIDs, pools.Content[i].Value) {
				continue
			}
			v = mapOf("members", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{scalar(chanIDs[0])}})
		}
		ps.Content = append(ps.Content, pools.Content[i], v)
	}
	return docOf(mapOf("channels", chans, "pools", ps))
}

// poolIDErrors: pool ids the page's routes shadow.
func poolIDErrors(data []byte) []FieldError {
	doc, err := parseDoc(data)
	if err != nil {
		return nil
	}
	var out []FieldError
	pools := mapValue(doc.Content[0], "pools")
	for i := 0; pools != nil && pools.Kind == yaml.MappingNode && i+1 < len(pools.Content); i += 2 {
		if id := pools.Content[i].Value; slices.Contains(reservedPools, id) {
			out = append(out, FieldError{"pools." + id, fmt.Sprintf("pool id %q is reserved (/pool/%s is a page route); pick another name", id, id)})
		}
	}
	return out
}

func fieldError(err error) FieldError {
	var ce *config.ConfigError
	if errors.As(err, &ce) {
		return FieldError{Path: ce.Path, Message: ce.Msg}
	}
	return FieldError{Message: err.Error()}
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

// mapOf builds a mapping from key, value pairs (keys as strings).
func mapOf(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		m.Content = append(m.Content, scalar(k), kv[i+1].(*yaml.Node))
	}
	return m
}

func docOf(root *yaml.Node) []byte {
	b, _ := encodeDoc(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}, 2)
	return b
}
