package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dual-proxy/dual-proxy/envrewrite"
)

// Hints of `dual-proxy pool test` (fresh-user trial findings): a pool named
// without a model gets the models it serves, a refused token gets where the
// expected one comes from. Neither ever prints a token.

// envPoolToken is the variable of both the instance's --pool-token and pool
// test's --token.
const envPoolToken = "DUAL_PROXY_POOL_TOKEN"

// modelsHint says which models pool poolID serves (SPEC POOL-14, POOL-12:
// the unified models of its models:, else those its members declare, as
// /pool/status lists them) and how to name one; read from the instance
// poolTarget picks, without a token (/pool/status is open).
func modelsHint(ctx context.Context, env []string, poolID, addrFlag string) string {
	example := "dual-proxy pool test " + poolID + " MODEL"
	addr, _, note, err := poolTarget(env, poolID, addrFlag, "")
	if err != nil {
		return err.Error()
	}
	raw, err := fetchDoc(ctx, addr, "/pool/status")
	if err != nil {
		why := oneLine(err.Error())
		if strings.HasPrefix(note, "no running instance") {
			why = strings.TrimSuffix(note, "; ")
		}
		return why + ", so its models cannot be listed; start one (dual-proxy --config FILE, or dual-proxy run --pool " + poolID + " -- CMD), then: " + example
	}
	var doc poolStateDoc
	if json.Unmarshal(raw, &doc) != nil {
		return addr + " did not answer a pool status; name the model: " + example
	}
	var pools []string
	for _, p := range doc.Pools {
		pools = append(pools, p.ID)
		if p.ID != poolID {
			continue
		}
		if len(p.Models) == 0 {
			return fmt.Sprintf("pool %q on %s lists no models (no models: in its config, none declared by its members), so any model id goes to the members as is: name one they serve, e.g. %s", poolID, addr, example)
		}
		ids := make([]string, len(p.Models))
		for i, m := range p.Models {
			ids[i] = m.ID
		}
		return fmt.Sprintf("pool %q on %s serves %s: e.g. dual-proxy pool test %s %s", poolID, addr, strings.Join(ids, ", "), poolID, ids[0])
	}
	if len(pools) == 0 {
		return fmt.Sprintf("%s serves no pool %q (it has none); name the model: %s", addr, poolID, example)
	}
	return fmt.Sprintf("%s serves no pool %q (its pools: %s)", addr, poolID, strings.Join(pools, ", "))
}

// poolsHint names the pools the running instances serve (the registry's
// entries, SPEC OPS-6; with --addr that instance's /pool/status), for
// `dual-proxy pool test` without arguments.
func poolsHint(ctx context.Context, env []string, addrFlag string) string {
	var served []string
	if addrFlag != "" {
		addr, err := statusAddr(addrFlag)
		if err != nil {
			return "--addr: " + err.Error()
		}
		if raw, err := fetchDoc(ctx, addr, "/pool/status"); err == nil {
			var doc poolStateDoc
			if json.Unmarshal(raw, &doc) == nil {
				for _, p := range doc.Pools {
					served = append(served, p.ID+" on "+addr)
				}
			}
		}
	} else {
		for _, e := range instances(env) {
			for _, p := range e.Pools {
				served = append(served, p+" on "+e.Addr)
			}
		}
	}
	if len(served) == 0 {
		return "no running instance serves a pool; start one (dual-proxy --config FILE, or dual-proxy run --pool POOL -- CMD), then: dual-proxy pool test POOL MODEL"
	}
	return "running pools: " + strings.Join(served, ", ") + "; dual-proxy pool test POOL lists a pool's models"
}

// tokenHint explains a 401/403 from the instance at addr to a pool test
// that sent the token sent ("" for none); given is the --token or
// DUAL_PROXY_POOL_TOKEN value, "" when the token came from the registry
// (SPEC POOL-20, OPS-6). It says which token the instance expects and where
// this command took its own from; it names sources, never a token.
func tokenHint(env []string, addr, given, sent string) string {
	const expected = "it wants the token it was started with (dual-proxy: --pool-token / " + envPoolToken + "; a launcher: its per-launch token, registered for pool test to find)"
	e, registered := instanceByAddr(env, addr)
	regTok := ""
	if registered {
		regTok, _ = e.Token()
	}
	switch {
	case sent == "" && registered:
		return fmt.Sprintf("no token sent: %s (pid %d) registered none this user can read; %s: pass it with --token or %s", addr, e.PID, expected, envPoolToken)
	case sent == "":
		return fmt.Sprintf("no token sent and %s is not registered in %s; %s: pass it with --token or %s", addr, registryDir(env), expected, envPoolToken)
	case given != "":
		from := "--token"
		if v, ok := envrewrite.Get(env, envPoolToken); ok && v == given {
			from = envPoolToken + " (environment)"
		}
		hint := "the token from " + from + " is not " + addr + "'s: " + expected
		if regTok != "" && regTok != given {
			hint += "; leave out --token and " + envPoolToken + " to use the one registered for it"
		}
		return hint
	default:
		return fmt.Sprintf("the token registered for %s (pid %d, in %s) was refused: %s; pass the right one with --token", addr, e.PID, registryDir(env), expected)
	}
}
