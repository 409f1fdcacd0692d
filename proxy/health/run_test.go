package health

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// statusOrigin is a loopback origin answering its current status.
func statusOrigin(t *testing.T, status *atomic.Int32) *testworld.Origin {
	return testworld.NewOriginHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
}

// A run checks the candidates in default order through real gateways and
// origins until the health state has its preference (SPEC HC-1).
func TestRun(t *testing.T) {
	t.Run("HC-1/first-passing-candidate-preferred-502-gateway-not-alive", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw1, gw2 := testworld.NewGateway(t), testworld.NewGateway(t)
		gw1.SetMode(testworld.ModeStatus(502)) // its own 502 page
		c1, c2 := gatewayCand(t, gw1.URL), gatewayCand(t, gw2.URL)
		tg := newProbeTarget(t, origin.URL+"/health", nil, c1, c2, candidate.Direct)
		h, state := startChecker(t, tg, nil)
		h.Run()
		st := state.Snapshot()
		if st.Preferred != c2.Key() {
			t.Fatalf("preferred %q, want %q; results %+v", st.Preferred, c2.Key(), st.Results)
		}
		if len(st.Results) != 2 || st.Results[0].Alive || !st.Results[1].Alive {
			t.Fatalf("results %+v: want gw1 dead, gw2 alive, direct not checked", st.Results)
		}
		if gw2.Requests() != 1 || origin.Count() != 1 {
			t.Fatalf("gw2 requests %d, origin requests %d", gw2.Requests(), origin.Count())
		}
		if h.Runs() != 1 {
			t.Fatalf("runs %d, want 1", h.Runs())
		}
	})

	t.Run("CD-2/only-candidates-proved-alive-are-reported", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gw1, gw2 := testworld.NewGateway(t), testworld.NewGateway(t)
		gw1.SetMode(testworld.ModeStatus(407))
		c1, c2 := gatewayCand(t, gw1.URL), gatewayCand(t, gw2.URL)
		tg := newProbeTarget(t, origin.URL, nil, c1, c2, candidate.Direct)
		h, _ := startChecker(t, tg, nil)
		h.Run()
		if got := tg.provedKeys(); !slices.Equal(got, []string{c2.Key()}) {
			t.Fatalf("proved %v, want only %s (a 407 is the gateway's own answer)", got, c2.Key())
		}
		gw1.SetMode(testworld.ModePass)
		h.Run()
		// gw1 recovers over two passes (HC-4): the run goes on to gw2.
		if got := tg.provedKeys(); !slices.Equal(got, []string{c2.Key(), c1.Key(), c2.Key()}) {
			t.Fatalf("proved %v after gw1 passes, want %s, then %s and %s", got, c2.Key(), c1.Key(), c2.Key())
		}
	})

	t.Run("HC-1/all-failing-clears-preference", func(t *testing.T) {
		var status atomic.Int32
		status.Store(200)
		origin := statusOrigin(t, &status)
		gw := testworld.NewGateway(t)
		c := gatewayCand(t, gw.URL)
		tg := newProbeTarget(t, origin.URL, nil, c, candidate.Direct)
		h, state := startChecker(t, tg, nil)
		h.Run()
		if p := state.Preferred(); p != c.Key() {
			t.Fatalf("preferred %q", p)
		}
		status.Store(503)
		h.Run()
		if p := state.Preferred(); p != "" {
			t.Fatalf("preferred %q after every candidate failed, want none", p)
		}
	})

	t.Run("HC-1/OPS-1/no-candidate-alive-logs-why-per-candidate-never-the-path", func(t *testing.T) {
		var status atomic.Int32
		status.Store(503)
		origin := statusOrigin(t, &status)
		gw := testworld.NewGateway(t)
		gw.SetMode(testworld.ModeStatus(502))
		c := gatewayCand(t, gw.URL)
		var logs testkit.LogBuffer
		tg := newProbeTarget(t, origin.URL+"/secret-path", nil, c, candidate.Direct)
		h, _ := startChecker(t, tg, logs.Logger())
		h.Run()
		out := logs.String()
		for _, want := range []string{"level=WARN", "no candidate reached the health URL", c.Key() + ": gateway answered 502", "direct: status 503"} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "secret-path") {
			t.Errorf("log names the health URL's path (OPS-1):\n%s", out)
		}
	})

	t.Run("HC-1/origin-401-403-404-count-as-alive", func(t *testing.T) {
		for _, code := range []int32{401, 403, 404} {
			var status atomic.Int32
			status.Store(code)
			origin := statusOrigin(t, &status)
			gw := testworld.NewGateway(t)
			c := gatewayCand(t, gw.URL)
			h, state := startChecker(t, newProbeTarget(t, origin.URL, nil, c), nil)
			h.Run()
			if p := state.Preferred(); p != c.Key() {
				t.Fatalf("origin %d: preferred %q", code, p)
			}
		}
	})

	t.Run("HC-1/https-health-url-connect-tls-status", func(t *testing.T) {
		origin := testworld.NewTLSOrigin(t)
		gw1, gw2 := testworld.NewGateway(t), testworld.NewGateway(t)
		gw1.SetMode(testworld.ModeStatus(403)) // non-2xx to CONNECT: the gateway's answer
		c1, c2 := gatewayCand(t, gw1.URL), gatewayCand(t, gw2.URL)
		tg := newProbeTarget(t, origin.URL+"/", &tls.Config{RootCAs: origin.CertPool}, c1, c2, candidate.Direct)
		h, state := startChecker(t, tg, nil)
		h.Run()
		if p := state.Preferred(); p != c2.Key() {
			t.Fatalf("preferred %q, want %q; %+v", p, c2.Key(), state.Snapshot().Results)
		}
		if gw1.Connects() != 1 || gw2.Connects() != 1 || origin.Count() != 1 {
			t.Fatalf("CONNECTs %d/%d, origin %d", gw1.Connects(), gw2.Connects(), origin.Count())
		}
		// Without the right roots TLS fails: not alive.
		h2, state2 := startChecker(t, newProbeTarget(t, origin.URL+"/", &tls.Config{}, c2), nil)
		h2.Run()
		if p := state2.Preferred(); p != "" {
			t.Fatalf("preferred %q through an untrusted certificate", p)
		}
		if r := state2.Snapshot().Results; len(r) != 1 || !strings.Contains(r[0].Reason, "tls handshake: tls: ") {
			t.Fatalf("results %+v: want the reason of a failed tls handshake", r)
		}
	})
}

// localTarget is a Target whose checks fail on this machine's own
// resources (out of descriptors), as a real dial would report them.
type localTarget struct{ s Settings }

func (l localTarget) Settings() Settings { return l.s }

func (l localTarget) Check(_ context.Context, _ Settings, c candidate.Candidate) (route.HealthResult, bool) {
	return route.HealthResult{Key: c.Key(), Reason: "dial: too many open files"}, true
}

func (l localTarget) Proved(candidate.Candidate) {}

func TestRunOutOfLocalResources(t *testing.T) {
	t.Run("HC-1/check-failed-on-local-resources-records-nothing", func(t *testing.T) {
		var logs testkit.LogBuffer
		tg := localTarget{Settings{URL: mustURL(t, "http://health.test/"), Candidates: []candidate.Candidate{candidate.Direct}}}
		h, state := startChecker(t, tg, slog.New(slog.NewTextHandler(&logs, nil)))
		h.Run()
		if st := state.Snapshot(); !st.LastRun.IsZero() || len(st.Results) != 0 {
			t.Fatalf("a run that learnt nothing was recorded: %+v", st)
		}
		if out := logs.String(); !strings.Contains(out, "out of local resources") {
			t.Fatalf("log does not say the check was skipped:\n%s", out)
		}
	})
}

// A silent gateway (TCP accepted, nothing answered) costs a check no more
// than its timeout, for an http:// URL (the request is written, no status
// line comes) and an https:// one (the CONNECT is not answered).
func TestSilentGatewayCheck(t *testing.T) {
	for _, tc := range []struct{ name, scheme string }{
		{"HC-1/silent-gateway-http-check-ends-within-timeout-ms", "http"},
		{"HC-1/silent-gateway-https-check-ends-within-timeout-ms", "https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := testworld.NewGateway(t)
			gw.SetMode(testworld.ModeBlackhole)
			c := gatewayCand(t, gw.URL)
			tg := newProbeTarget(t, tc.scheme+"://health.example/", nil, c)
			const timeout = 300 * time.Millisecond
			s := tg.Settings()
			s.ConnectTimeout = timeout
			start := time.Now()
			r, local := tg.Check(context.Background(), s, c)
			took := time.Since(start)
			if r.Alive || local {
				t.Fatalf("result %+v local %v: want a failed check", r, local)
			}
			// Wide bound for a busy machine: the check's deadline is the
			// timeout; before, an http:// check waited 10 s more.
			if took > timeout+time.Second {
				t.Fatalf("check took %v, want within its timeout %v", took, timeout)
			}
			if r.Reason != "no answer within 300 ms" {
				t.Fatalf("reason %q", r.Reason)
			}
			if gw.Accepted() != 1 {
				t.Fatalf("gateway accepted %d connections, want 1", gw.Accepted())
			}
		})
	}
}
