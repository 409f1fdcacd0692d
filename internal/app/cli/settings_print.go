package cli

import (
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// Print writes the resolved configuration as aligned "key: value" lines,
// credentials redacted (SPEC LIS-4).
func (s *Settings) Print(w io.Writer) error {
	cands, warnings, err := route.BuildCandidates(s.Resolved.Spec)
	if err != nil {
		return err
	}
	// One row per key of internal/app/settings' table, in its order, as the
	// settings document shows it; then what is no setting.
	host, port, _ := s.listener()
	kv := [][2]string{{"listen", net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port))}}
	for _, k := range settings.Keys {
		kv = append(kv, [2]string{k.Name, shownValue(k, s.Live[k.Name])})
	}
	kv = append(kv, [2]string{"no-proxy (prefer-direct)", orNone(noProxyRules(s.Env))})
	if s.Mode != modeServe {
		kv = append(kv, [2]string{"log-file", s.LogFile}, [2]string{"kill-after-ms", fmt.Sprint(s.KillAfter.Milliseconds())})
		kv = append(kv, [2]string{"command", orNone(strings.Join(s.Command, " "))}, [2]string{"pool", orNone(s.PoolName)})
	}
	width := 0
	for _, p := range kv {
		width = max(width, len(p[0]))
	}
	for _, p := range kv {
		fmt.Fprintf(w, "%-*s  %s\n", width+1, p[0]+":", p[1])
	}
	fmt.Fprintln(w, "candidates (default order):")
	for i, c := range cands {
		extra := ""
		if c.CAFile != "" {
			extra = ", ca " + c.CAFile
		}
		fmt.Fprintf(w, "  %d. %-40s %-8s (%s%s)\n", i+1, c.String(), c.KindName(), c.Source, extra)
	}
	printPool(s, w)
	if len(warnings) > 0 {
		sort.Strings(warnings)
		fmt.Fprintln(w, "warnings:")
		for _, wn := range warnings {
			fmt.Fprintf(w, "  - %s\n", wn)
		}
	}
	return nil
}

// shownValue is a setting's value as --print-config shows it: masked
// (settings.Mask), an empty one as what it means ("(no check)"), a key not
// given as "(not set)".
func shownValue(k settings.Key, x any) string {
	if x == nil {
		return "(not set)"
	}
	text := settings.Text(settings.Mask(k.Name, x))
	if text == "" && k.Zero != "" {
		return "(" + k.Zero + ")"
	}
	return orNone(text)
}

func orNone(s string) string {
	if s == "" {
		return "(off)"
	}
	return s
}
