package testworld

import (
	"net/http"
	"net/url"
	"sync"
	"testing"
)

func TestGatewayHeadLogAndRefusedStatus(t *testing.T) {
	t.Run("RUN-1/head-log-records-each-request-head", func(t *testing.T) {
		o := NewOrigin(t)
		var mu sync.Mutex
		var heads []GatewayHead
		g := NewGateway(t, WithHeadLog(func(h GatewayHead) { mu.Lock(); heads = append(heads, h); mu.Unlock() }))
		c := client(t, g.URL, nil)
		get(t, c, o.URL+"/a?b=1")
		mu.Lock()
		defer mu.Unlock()
		if len(heads) != 1 || heads[0].Method != http.MethodGet || heads[0].Target != o.URL+"/a?b=1" || heads[0].UserAgent == "" || heads[0].ProxyAuthorization {
			t.Fatalf("heads %+v", heads)
		}
	})
	t.Run("RUN-1/refused-target-answered-with-refused-status", func(t *testing.T) {
		g := NewGateway(t, WithRefusedStatus(http.StatusForbidden))
		proxy, _ := url.Parse(g.URL)
		tr := &http.Transport{Proxy: http.ProxyURL(proxy)}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get("http://api.example.com/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d, want 403", resp.StatusCode)
		}
		refused := RefusedAddr(t)
		resp, err = (&http.Client{Transport: tr}).Get("http://" + refused + "/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("a loopback dial that fails: status %d, want 502", resp.StatusCode)
		}
	})
}
