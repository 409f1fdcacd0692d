//go:build browser && linux

package statusdoc_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/settings"
	"github.com/dual-proxy/dual-proxy/internal/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testworld"
	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

const formToken = "page-control-token-0123456789abcdef"

// settingsWorld is a running proxy on loopback whose listener serves the
// status page and the live settings (SPEC OPS-7) the way an instance
// mounts them: settings.Handler on the proxy's Mux, each accepted change
// applied to the engine with Reconfigure. The destination, target, is a
// loopback port where nothing listens, so direct fails; only the working
// gateway, good, reaches the origin for it (testworld's route). The first
// gateway, upstream-url, is dead.
type settingsWorld struct {
	addr   string // the proxy's listener, "127.0.0.1:PORT"
	target string // "127.0.0.1:PORT", refused when dialled directly
	origin *testworld.Origin
	good   *testworld.Gateway
	dead   string // the dead gateway's URL
	live   *settings.Live
	srv    *proxy.Server
}

func newSettingsWorld(t *testing.T) *settingsWorld {
	t.Helper()
	w := &settingsWorld{target: testworld.RefusedAddr(t), origin: testworld.NewOrigin(t)}
	w.good = testworld.NewGateway(t, testworld.WithName("good"), testworld.WithRoute(w.target, w.origin.Addr))
	w.dead = "http://" + testworld.RefusedAddr(t)
	mux := proxy.NewMux()
	srv, err := proxy.New(proxy.Config{Candidates: []candidate.Candidate{candidate.Direct}, Handler: mux})
	if err != nil {
		t.Fatal(err)
	}
	w.srv = srv
	w.addr = testkit.Serve(t, srv)
	mux.Attach(srv)
	_, port, _ := net.SplitHostPort(w.addr)
	bound, _ := strconv.Atoi(port)
	w.live, err = settings.New(settings.Options{
		Values:   startValues(w.dead),
		Defaults: startValues(""),
		Env:      settings.Env{BoundPort: bound, StrictGateways: true},
		Apply: func(r *settings.Resolved) error {
			cfg, err := engineConfig(r)
			if err != nil {
				return err
			}
			return srv.Engine().Reconfigure(cfg)
		},
		Probe: func(ctx context.Context, gateway string) (string, time.Duration, error) {
			return probeThrough(ctx, gateway, w.target)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := settings.Handler(w.live, formToken)
	mux.Handle(settings.Path, h)
	mux.Handle(settings.Path+"/", h)
	return w
}

// startValues are an instance's start values: upstream the only gateway
// (none when ""), loopback destinations through the candidates like any
// other (the test's destinations are all on loopback).
func startValues(upstream string) settings.Values {
	return settings.Values{
		settings.ListenHost: "127.0.0.1", settings.ListenPort: 7896, settings.PortFallback: 10,
		settings.TimeoutMS: 5000, settings.ResponseTimeout: 30000, settings.LogLevel: "info", settings.LogFormat: "text",
		settings.HealthURL: "", settings.FastFailMS: 2000, settings.RaceDelayMS: 250,
		settings.TunnelIdleMS: 3600000, settings.TunnelHalfMS: 60000, settings.HeadTimeoutMS: 10000,
		settings.PrefTTLMS: 60000, settings.CooldownMS: 30000, settings.HealthInterval: 0, settings.HealthRecover: 2,
		settings.PreferDirect: []string{}, settings.PreferProxy: []string{}, settings.UpstreamPort: 7897,
		settings.Gateway: []string{}, settings.UpstreamURL: upstream, settings.UpstreamHost: "",
		settings.LoopbackDirect: false, settings.VerifyTLS: false, settings.RetryAfterSend: false, settings.RetryWithKey: false,
	}
}

// engineConfig is the proxy.Config r describes (the engine's own fields,
// Handler and Logger, stay the engine's: Reconfigure keeps them).
func engineConfig(r *settings.Resolved) (proxy.Config, error) {
	cands, _, err := route.BuildCandidates(r.Spec)
	if err != nil {
		return proxy.Config{}, err
	}
	v := r.Values
	ms := func(k string) time.Duration { return time.Duration(v.Int(k)) * time.Millisecond }
	return proxy.Config{
		Candidates: cands, Rules: r.Rules,
		ConnectTimeout: ms(settings.TimeoutMS), FastFail: ms(settings.FastFailMS), ResponseTimeout: ms(settings.ResponseTimeout),
		RaceDelay: ms(settings.RaceDelayMS), TLSProbe: v.Bool(settings.VerifyTLS),
		TunnelIdleTimeout: ms(settings.TunnelIdleMS), TunnelHalfCloseTimeout: ms(settings.TunnelHalfMS), HeadTimeout: ms(settings.HeadTimeoutMS),
		Cooldown: ms(settings.CooldownMS), PrefTTL: ms(settings.PrefTTLMS),
		HealthURL: r.HealthURL, HealthInterval: ms(settings.HealthInterval), HealthRecoverCount: v.Int(settings.HealthRecover),
		LoopbackDirect:              v.Bool(settings.LoopbackDirect),
		RetryNonIdempotentAfterSend: v.Bool(settings.RetryAfterSend), RetryWithIdempotencyKey: v.Bool(settings.RetryWithKey),
	}, nil
}

// probeThrough is the page's gateway test: one GET of target's root
// through gateway alone, on an engine of its own.
func probeThrough(ctx context.Context, gateway, target string) (string, time.Duration, error) {
	cand, err := route.ParseGateway(gateway, "gateway")
	if err != nil {
		return "", 0, err
	}
	e, err := proxy.NewEngine(proxy.Config{Candidates: []candidate.Candidate{cand}, ConnectTimeout: 5 * time.Second})
	if err != nil {
		return "", 0, err
	}
	defer e.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+target+"/", nil)
	start := time.Now()
	resp, err := (&http.Client{Transport: e.RoundTripper(), Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return target, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return target, 0, fmt.Errorf("through %s: %s", route.RedactURL(gateway), resp.Status)
	}
	return target, time.Since(start), nil
}

// get sends one GET of the target through the proxy and returns the
// status and the gateway that forwarded it (testworld's header; "" for
// none).
func (w *settingsWorld) get(t *testing.T) (int, string) {
	t.Helper()
	pu, _ := url.Parse("http://" + w.addr)
	tr := &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get("http://" + w.target + "/")
	if err != nil {
		t.Fatalf("GET through the proxy: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && string(body) != w.origin.Greeting() {
		t.Fatalf("GET through the proxy: %q, want the origin's greeting", body)
	}
	return resp.StatusCode, resp.Header.Get("X-Testworld-Gateway")
}
