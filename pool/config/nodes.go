package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// YAML node helpers of the decoder: each error is a *ConfigError naming the
// node's path.

// eachKey walks a mapping node in order; fn gets the key, the value and the
// value's path. Duplicate keys are errors.
func eachKey(n *yaml.Node, p string, fn func(k string, v *yaml.Node, kp string) error) error {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		return &ConfigError{p, "expected a mapping"}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		kp := k
		if p != "" {
			kp = p + "." + k
		}
		if seen[k] {
			return &ConfigError{kp, "duplicate key"}
		}
		seen[k] = true
		if err := fn(k, n.Content[i+1], kp); err != nil {
			return err
		}
	}
	return nil
}

func eachItem(n *yaml.Node, p string, fn func(v *yaml.Node, ip string) error) error {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		return &ConfigError{p, "expected a list"}
	}
	for i, v := range n.Content {
		if err := fn(v, fmt.Sprintf("%s[%d]", p, i)); err != nil {
			return err
		}
	}
	return nil
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 16; i++ {
		n = n.Alias
	}
	return n
}

func scalar(n *yaml.Node, p string) (string, error) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", &ConfigError{p, "expected a string"}
	}
	return strings.TrimSpace(n.Value), nil
}

func posInt(n *yaml.Node, p string) (int, error) {
	s, err := scalar(n, p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		return 0, &ConfigError{p, fmt.Sprintf("expected a positive integer, got %q", s)}
	}
	return v, nil
}

func millis(n *yaml.Node, p string, zeroOK bool) (time.Duration, error) {
	s, err := scalar(n, p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || (v == 0 && !zeroOK) || v > 1<<40 {
		return 0, &ConfigError{p, fmt.Sprintf("expected milliseconds (integer > 0), got %q", s)}
	}
	return time.Duration(v) * time.Millisecond, nil
}

func stringList(n *yaml.Node, p string) ([]string, error) {
	var out []string
	err := eachItem(n, p, func(v *yaml.Node, ip string) error {
		s, err := scalar(v, ip)
		if err == nil && s == "" {
			err = &ConfigError{ip, "empty"}
		}
		out = append(out, s)
		return err
	})
	return out, err
}

func inputList(n *yaml.Node, p string) ([]string, error) {
	out, err := stringList(n, p)
	for i, s := range out {
		if err == nil && s != "text" && s != "image" && s != "pdf" {
			err = &ConfigError{fmt.Sprintf("%s[%d]", p, i), fmt.Sprintf("unknown input %q (text, image, pdf)", s)}
		}
	}
	return out, err
}

func effortList(n *yaml.Node, p string) ([]string, error) {
	out, err := stringList(n, p)
	for i, s := range out {
		if err == nil && !validEffort(s) {
			err = &ConfigError{fmt.Sprintf("%s[%d]", p, i), fmt.Sprintf("unknown effort %q (known: %s)", s, strings.Join(effortScale, ", "))}
		}
	}
	return out, err
}
