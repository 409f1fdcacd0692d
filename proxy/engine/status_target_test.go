package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/proxytest"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/engine"
	"github.com/dual-proxy/dual-proxy/proxy/statusdoc"
)

// Offline, the health URL fails on every path while a gateway serves
// traffic: the status blames the target, not the paths, and a path
// nothing proves is untried, not hot, in the JSON as on the page and in
// the status command (SPEC HC-1, OPS-2).
func TestStatusHealthTargetDown(t *testing.T) {
	origin, _, _ := countingOrigin(t)
	gw := testworld.NewGateway(t, testworld.WithRoute("served.test:80", origin.Addr))
	gc := proxytest.Gateway(t, gw.URL)
	// The health URL leads nowhere on either path: refused direct, and
	// the gateway answers its own 502 for a target it cannot reach.
	e := healthEngine(t, engine.Config{Candidates: []candidate.Candidate{gc, candidate.Direct},
		HealthURL: mustURL(t, "http://"+testworld.RefusedAddr(t)+"/")})
	addr := testkit.Serve(t, proxy.NewWithEngine(e))
	for range 2 {
		if code, _, _ := plainVia(t, addr, "GET", "served.test", ""); code != 200 {
			t.Fatalf("GET through the gateway: %d", code)
		}
	}
	e.Checker().Run()
	st := e.Status()

	t.Run("HC-1/target-failing-on-every-path-marks-no-path", func(t *testing.T) {
		if !st.Health.TargetDown || len(st.Health.Results) != 2 {
			t.Fatalf("health %+v: want the target down after checking both paths", st.Health)
		}
		for _, m := range e.HealthState().Snapshot().Marks {
			if !m.Eligible {
				t.Fatalf("mark %+v: a target down on every path marked a path", m)
			}
		}
		if c := st.Candidates[0]; c.State != statusdoc.StateHot {
			t.Fatalf("the gateway that served two requests shows %q, want hot", c.State)
		}
	})
	t.Run("OPS-2/untried-candidate-is-untried-in-the-json", func(t *testing.T) {
		if c := st.Candidates[1]; c.Key != "direct" || c.State != statusdoc.StateUntried {
			t.Fatalf("direct %+v: never used, its check not passed: want untried", c)
		}
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"state":"untried"`) || !strings.Contains(string(b), `"target_down":true`) {
			t.Fatalf("JSON lacks the untried state or target_down:\n%s", b)
		}
	})
}
