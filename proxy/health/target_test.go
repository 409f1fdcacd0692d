package health

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/dial"
	"github.com/dual-proxy/dual-proxy/proxy/route"
	"github.com/dual-proxy/dual-proxy/proxy/upstream"
)

// probeTarget is a Target made of the real parts: a Prober on a real
// upstream client and dialer. It records the candidates proved alive.
type probeTarget struct {
	p *Prober

	mu     sync.Mutex
	s      Settings
	proved []string
}

// gatewayAnswer is the engine's rule for answers a gateway makes itself,
// as far as these tests need it: 407 and its 5xx pages.
func gatewayAnswer(_ candidate.Candidate, status int, _ string) bool {
	switch status {
	case 500, 502, 503, 504, http.StatusProxyAuthRequired:
		return true
	}
	return false
}

// newProbeTarget returns a probeTarget checking raw (the health URL)
// through cands, with roots as the https:// check's TLS base.
func newProbeTarget(t *testing.T, raw string, roots *tls.Config, cands ...candidate.Candidate) *probeTarget {
	t.Helper()
	d := &dial.Dialer{}
	if err := d.Prepare(cands); err != nil {
		t.Fatal(err)
	}
	client := &upstream.Client{Dial: d.Forward, ResponseTimeout: ResponseTimeout}
	t.Cleanup(client.CloseIdle)
	return &probeTarget{
		p: &Prober{Client: client, Dialer: d, TLS: roots, GatewayFailure: gatewayAnswer},
		s: Settings{URL: mustURL(t, raw), ConnectTimeout: 5 * time.Second, Candidates: cands},
	}
}

func (pt *probeTarget) Settings() Settings {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.s
}

func (pt *probeTarget) Check(ctx context.Context, s Settings, c candidate.Candidate) (route.HealthResult, bool) {
	return pt.p.Check(ctx, s, c)
}

func (pt *probeTarget) Proved(c candidate.Candidate) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	pt.proved = append(pt.proved, c.Key())
}

func (pt *probeTarget) provedKeys() []string {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return append([]string(nil), pt.proved...)
}

// startChecker starts a Checker for tg recording into a fresh health
// state (recover count 2, the default of --health-recover-count) and logging to log (nil: discarded); it is
// stopped at the test's end.
func startChecker(t *testing.T, tg Target, log *slog.Logger) (*Checker, *route.Health) {
	t.Helper()
	if log == nil {
		log = quietLog()
	}
	state := route.NewHealth(2, time.Now)
	h := Start(tg, state, log)
	t.Cleanup(h.Stop)
	return h, state
}

// quietLog is a logger that drops everything below ERROR.
func quietLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelError}))
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func gatewayCand(t *testing.T, raw string) candidate.Candidate {
	t.Helper()
	c, err := route.ParseGateway(raw, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	return c
}
