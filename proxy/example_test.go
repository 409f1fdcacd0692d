package proxy_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/dual-proxy/dual-proxy/proxy"
	"github.com/dual-proxy/dual-proxy/proxy/candidate"
	"github.com/dual-proxy/dual-proxy/proxy/route"
)

// forwardProxy is a minimal upstream HTTP proxy ("gateway") for the
// example: it forwards absolute-form plain requests.
func forwardProxy() *httptest.Server {
	tr := &http.Transport{Proxy: nil}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := r.Clone(r.Context())
		out.RequestURI = ""
		resp, err := tr.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
}

// An http.Client routed through the engine (SPEC OPS-4): the first gateway
// refuses connections, so the request goes through the second one. The
// engine's state — the first gateway's cooldown, the per-host cache —
// is the same a proxy.Server on this engine would use.
func ExampleEngine_RoundTripper() {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from the origin")
	}))
	defer origin.Close()
	gateway := forwardProxy()
	defer gateway.Close()

	// A loopback port where nothing listens: the dead first gateway.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := ln.Addr().String()
	ln.Close()

	dead, _ := route.ParseGateway("http://"+deadAddr, "upstream-url")
	good, _ := route.ParseGateway(gateway.Listener.Addr().String(), "gateway")
	engine, err := proxy.NewEngine(proxy.Config{
		Candidates: []candidate.Candidate{dead, good, candidate.Direct},
		Cooldown:   30 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer engine.Close()

	client := &http.Client{Transport: engine.RoundTripper(), Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get(origin.URL + "/greeting")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))

	st := engine.Status()
	fmt.Println("first gateway:", st.Candidates[0].State, st.Candidates[0].LastFailure.Phase)
	fmt.Println("served by the second gateway:", st.Decisions[0].Candidate == good.String())
	// Output:
	// 200 hello from the origin
	// first gateway: cooling gateway-connect
	// served by the second gateway: true
}
