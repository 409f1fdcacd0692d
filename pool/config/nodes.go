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
// value's path. An error of fn does not stop the walk: every error is
// returned (errList.err). A duplicate key is an error at its own position
// naming the first one's line.
func eachKey(n *yaml.Node, p string, fn func(k string, v *yaml.Node, kp string) error) error {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		return cfgErr(p, "expected a mapping")
	}
	var errs errList
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn := n.Content[i]
		k := kn.Value
		kp := k
		if p != "" {
			kp = p + "." + k
		}
		if first := seen[k]; first != nil {
			e := cfgErr(kp, fmt.Sprintf("duplicate key (first at line %d)", first.Line))
			e.Line, e.Column, e.repeat = kn.Line, kn.Column, true
			errs.add(e)
			continue
		}
		seen[k] = kn
		errs.add(fn(k, n.Content[i+1], kp))
	}
	return errs.err()
}

// eachItem walks a list node; like eachKey it returns every error of fn.
func eachItem(n *yaml.Node, p string, fn func(v *yaml.Node, ip string) error) error {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.Value != "" && quoteSafe(n.Value) != hiddenValue {
		// `members: a` for one member, a likely slip: say how to write
		// it; a value that might be a key is not echoed.
		return cfgErr(p, "expected a list: write ["+n.Value+"] for one item")
	}
	if n.Kind != yaml.SequenceNode {
		return cfgErr(p, "expected a list")
	}
	var errs errList
	for i, v := range n.Content {
		errs.add(fn(v, fmt.Sprintf("%s[%d]", p, i)))
	}
	return errs.err()
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
		return "", cfgErr(p, "expected a string")
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
		return 0, cfgErr(p, fmt.Sprintf("expected a positive integer, got %q", s))
	}
	return v, nil
}

func boolean(n *yaml.Node, p string) (bool, error) {
	s, err := scalar(n, p)
	if err != nil {
		return false, err
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, cfgErr(p, fmt.Sprintf("expected true or false, got %q", s))
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
		return 0, cfgErr(p, fmt.Sprintf("expected milliseconds (integer > 0), got %q", s))
	}
	return time.Duration(v) * time.Millisecond, nil
}

func stringList(n *yaml.Node, p string) ([]string, error) {
	var out []string
	err := eachItem(n, p, func(v *yaml.Node, ip string) error {
		s, err := scalar(v, ip)
		if err == nil && s == "" {
			err = cfgErr(ip, "empty")
		}
		out = append(out, s)
		return err
	})
	return out, err
}

func inputList(n *yaml.Node, p string) ([]string, error) {
	return checkedList(n, p, func(s string) string {
		if s == "text" || s == "image" || s == "pdf" {
			return ""
		}
		return fmt.Sprintf("unknown input %q (text, image, pdf)", s)
	})
}

func effortList(n *yaml.Node, p string) ([]string, error) {
	return checkedList(n, p, func(s string) string {
		if validEffort(s) {
			return ""
		}
		return fmt.Sprintf("unknown effort %q (known: %s)", s, strings.Join(effortScale, ", "))
	})
}

// checkedList is a string list whose every item bad says "" about; the
// others are errors at their item with bad's message.
func checkedList(n *yaml.Node, p string, bad func(string) string) ([]string, error) {
	out, err := stringList(n, p)
	if err != nil {
		return out, err
	}
	var errs errList
	for i, s := range out {
		if msg := bad(s); msg != "" {
			errs.add(cfgErr(fmt.Sprintf("%s[%d]", p, i), msg))
		}
	}
	return out, errs.err()
}
