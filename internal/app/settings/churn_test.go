package settings_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/app/settings"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
	"github.com/dual-proxy/dual-proxy/internal/testbed/testworld"
	"github.com/dual-proxy/dual-proxy/proxy"
)

// churnProxy is a proxy whose settings are a Live applied to its engine,
// as the command line wires them: the upstream a working gateway, the
// gateways empty, loopback destinations through the candidate list.
func churnProxy(t *testing.T, upstream string) (addr string, live *settings.Live) {
	t.Helper()
	v := with(startValues(), settings.UpstreamURL, upstream, settings.LoopbackDirect, false, settings.ListenPort, 0)
	r, fes := settings.Check(v, settings.Env{})
	if fes != nil {
		t.Fatal(fes)
	}
	cfg, _, err := r.ProxyConfig(0)
	if err != nil {
		t.Fatal(err)
	}
	mux := proxy.NewMux()
	cfg.Handler = mux
	srv, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux.Attach(srv)
	live, err = settings.New(settings.Options{Values: v, Defaults: startValues(), Apply: func(r *settings.Resolved) error {
		cfg, _, err := r.ProxyConfig(0)
		if err != nil {
			return err
		}
		return srv.Engine().Reconfigure(cfg)
	}})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle(settings.Path, settings.Handler(live, testToken))
	return testkit.Serve(t, srv), live
}

// TestSettingsChurnUnderTraffic changes the settings every 5 ms (at least
// 25 a second even on a loaded box) for 2 s while 32 clients send
// requests and use tunnels; every configuration it sets has a working
// path, so every failure is one the settings do not explain.
func TestSettingsChurnUnderTraffic(t *testing.T) {
	t.Run("OPS-7/100-changes-a-second-under-32-clients-no-unexplained-error", func(t *testing.T) {
		origin := testworld.NewOrigin(t)
		gwA, gwB := testworld.NewGateway(t), testworld.NewGateway(t)
		addr, live := churnProxy(t, gwA.URL)
		changes := []map[string]any{
			{settings.Gateway: []string{gwB.URL}, settings.CooldownMS: 1000},
			{settings.Gateway: []string{gwB.URL, gwA.URL}, settings.PreferDirect: []string{"127.0.0.1"}},
			{settings.Gateway: []string{}, settings.PreferDirect: []string{}, settings.FastFailMS: 500},
			{settings.RaceDelayMS: 0, settings.PrefTTLMS: 0, settings.VerifyTLS: false},
			{settings.RaceDelayMS: 250, settings.PrefTTLMS: 60000, settings.CooldownMS: 0, settings.LogLevel: "debug"},
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var requests, tunnelRequests atomic.Int64
		errs := make(chan error, 64)
		report := func(err error) {
			select {
			case errs <- err:
			default:
			}
		}
		proxyURL, _ := url.Parse("http://" + addr)
		tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
		for i := 0; i < 16; i++ {
			wg.Add(2)
			go func() { // plain requests
				defer wg.Done()
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					resp, err := client.Get(fmt.Sprintf("%s/r%d", origin.URL, n))
					if err != nil {
						report(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						report(fmt.Errorf("request %d: %s", n, resp.Status))
						return
					}
					requests.Add(1)
				}
			}()
			go func() { // tunnels, each carrying a few requests
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := churnTunnel(addr, origin.Addr, 3); err != nil {
						report(err)
						return
					}
					tunnelRequests.Add(3)
				}
			}()
		}
		applied := 0
		deadline := time.Now().Add(2 * time.Second)
		tick := time.NewTicker(5 * time.Millisecond)
		for time.Now().Before(deadline) {
			<-tick.C
			body := map[string]json.RawMessage{}
			for k, v := range changes[applied%len(changes)] {
				b, _ := json.Marshal(v)
				body[k] = b
			}
			if _, err := live.Change(live.Document().Version, body, "api"); err != nil {
				t.Errorf("change %d: %v", applied, err)
				break
			}
			applied++
		}
		tick.Stop()
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("unexplained failure under settings churn: %v", err)
		}
		t.Logf("%d changes, %d requests, %d requests in tunnels", applied, requests.Load(), tunnelRequests.Load())
		if applied < 50 || requests.Load() == 0 || tunnelRequests.Load() == 0 {
			t.Fatalf("too little happened: %d changes, %d requests, %d in tunnels", applied, requests.Load(), tunnelRequests.Load())
		}
	})
}

// churnTunnel opens a CONNECT tunnel through the proxy at addr to target
// and sends n keep-alive requests through it.
func churnTunnel(addr, target string, n int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return fmt.Errorf("CONNECT: %w", err)
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("CONNECT: %s", resp.Status)
	}
	for i := 0; i < n; i++ {
		io.WriteString(c, "GET /t HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return fmt.Errorf("request %d in the tunnel: %w", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("request %d in the tunnel: %s", i, resp.Status)
		}
	}
	return nil
}
