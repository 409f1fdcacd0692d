package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/dual-proxy/dual-proxy/envrewrite"
	"github.com/dual-proxy/dual-proxy/internal/app/cli/statusview"
	"github.com/dual-proxy/dual-proxy/pool/config"
)

// Hints of `dual-proxy pool test`: a pool named
// without a model gets the models it serves, a refused token gets where the
// expected one comes from. Neither ever prints a token.

// envPoolToken is the variable of both the instance's --pool-token and pool
// test's --token.
const envPoolToken = "DUAL_PROXY_POOL_TOKEN"

// listing is what `dual-proxy pool test` answers without POOL or without
// MODEL: the list the user asked for (text for stdout, code 0), or one line
// saying why there is none (code 1 when no instance could be asked, 2 when
// the named pool does not exist: a bad argument). The README
// presents both lists as uses, so a list is not a usage error (it exited 2).
// doc is the list as a JSON document, what --json prints instead of text
// (poolList, modelList); nil when there is no list.
type listing struct {
	text string
	code int
	doc  any
}

// poolList is `dual-proxy pool test --json`'s document: the pools the
// running instances serve, each with its instance (HOST:PORT).
type poolList struct {
	Pools []servedPool `json:"pools"`
}

// servedPool is one pool of poolList and the instance serving it.
type servedPool struct {
	Pool     string `json:"pool"`
	Instance string `json:"instance"`
}

// modelList is `dual-proxy pool test POOL --json`'s document: the models
// pool Pool serves on Instance (HOST:PORT), as /pool/status lists them
// (capabilities merged over the members); empty when it lists none (any model id goes to the
// members as is).
type modelList struct {
	Pool     string             `json:"pool"`
	Instance string             `json:"instance"`
	Models   []config.ModelInfo `json:"models"`
}

// listModels lists the models pool poolID serves (SPEC POOL-14:
// the unified models of its models:, else those its members declare, as
// /pool/status lists them) and how to name one; read from the instance
// poolTarget picks, without a token (/pool/status is open).
func listModels(ctx context.Context, env []string, poolID, addrFlag string) listing {
	example := "dual-proxy pool test " + poolID + " MODEL"
	dest, err := poolTarget(env, poolID, addrFlag, "")
	if err != nil {
		return listing{err.Error(), 2, nil}
	}
	addr := dest.addr
	raw, err := fetchDoc(ctx, addr, "/pool/status")
	if err != nil {
		why := oneLine(err.Error())
		if dest.fallback {
			if len(dest.running) > 0 {
				// Instances run, none with this pool: a pool that does not
				// exist (exit 2), not the default's dial error.
				return listing{noneServes(poolID, dest.running) + "; dual-proxy pool test lists the pools", 2, nil}
			}
			why = noneServes(poolID, nil)
		}
		why += ", so its models cannot be listed"
		if _, fromEnv := addrSource(env, addrFlag); fromEnv && addrFlag != "" {
			return listing{why + envAddrNote("pool test finds the instance serving the pool"), 1, nil}
		}
		return listing{why + "; start one (dual-proxy --config FILE, or dual-proxy run --pool " + poolID + " -- CMD), then: " + example, 1, nil}
	}
	var doc statusview.PoolDoc
	if json.Unmarshal(raw, &doc) != nil {
		return listing{addr + " did not answer a pool status; name the model: " + example, 1, nil}
	}
	var pools []string
	for _, p := range doc.Pools {
		pools = append(pools, p.ID)
		if p.ID != poolID {
			continue
		}
		doc := modelList{Pool: poolID, Instance: addr, Models: p.Models}
		if len(p.Models) == 0 {
			doc.Models = []config.ModelInfo{}
			return listing{fmt.Sprintf("pool %q on %s lists no models (no models: in its config, none declared by its members), so any model id goes to the members as is: name one they serve, e.g. %s\n", poolID, addr, example), 0, doc}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "models of pool %q on %s (%s tests one):\n", poolID, addr, example)
		for _, m := range p.Models {
			fmt.Fprintf(&b, "  %s\n", m.ID)
		}
		return listing{b.String(), 0, doc}
	}
	if len(pools) == 0 {
		return listing{fmt.Sprintf("%s serves no pool %q (it has none)", addr, poolID), 2, nil}
	}
	return listing{fmt.Sprintf("%s serves no pool %q (its pools: %s)", addr, poolID, strings.Join(pools, ", ")), 2, nil}
}

// listPools lists the pools the running instances serve (the registry's
// entries; with --addr that instance's /pool/status), for
// `dual-proxy pool test` without arguments.
func listPools(ctx context.Context, env []string, addrFlag string) listing {
	var found []servedPool
	if addrFlag != "" {
		src, fromEnv := addrSource(env, addrFlag)
		addr, err := statusAddr(addrFlag)
		if err != nil {
			return listing{src + ": " + err.Error(), 2, nil}
		}
		raw, err := fetchDoc(ctx, addr, "/pool/status")
		if err != nil {
			why := oneLine(err.Error()) + ", so its pools cannot be listed"
			if fromEnv {
				why += envAddrNote("pool test lists the pools of every running instance")
			}
			return listing{why, 1, nil}
		}
		var doc statusview.PoolDoc
		if json.Unmarshal(raw, &doc) != nil {
			return listing{addr + " did not answer a pool status", 1, nil}
		}
		for _, p := range doc.Pools {
			found = append(found, servedPool{p.ID, addr})
		}
	} else {
		for _, e := range instances(env) {
			for _, p := range e.Pools {
				found = append(found, servedPool{p, e.Addr})
			}
		}
	}
	if len(found) == 0 {
		where := "no running instance serves a pool"
		if addrFlag != "" {
			where = "the instance at " + addrFlag + " serves no pool"
		}
		return listing{where + "; start one (dual-proxy --config FILE, or dual-proxy run --pool POOL -- CMD), then: dual-proxy pool test POOL MODEL", 1, nil}
	}
	var b strings.Builder
	b.WriteString("pools of the running instances (dual-proxy pool test POOL lists a pool's models):\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, f := range found {
		fmt.Fprintf(tw, "  %s\t%s\n", f.Pool, f.Instance)
	}
	tw.Flush()
	return listing{b.String(), 0, poolList{found}}
}

// tokenHint explains a 401/403 from the instance at addr to a pool test
// that sent the token sent ("" for none); given is the --token or
// DUAL_PROXY_POOL_TOKEN value, "" when the token came from the registry
// (where a launcher's per-launch token is). It says which token the
// instance expects and where this command took its own from (SPEC
// POOL-14); it names sources, never a token, since the output is pasted.
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
