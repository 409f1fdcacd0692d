package pool

import (
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/config"
)

func TestReload(t *testing.T) {
	t.Run("POOL-16/reload-keeps-bindings-of-existing-members", func(t *testing.T) {
		w := newWorld(t, []string{"a", "b"}, []behaviour{okAnswer("a"), okAnswer("b")}, "", Options{})
		w.call("s1", true) // a
		w.call("s2", true) // b
		cfg, _ := w.pool.config()
		// New config: pool p without b.
		y := "channels:\n  a: {api: anthropic, base_url: " + w.mocks["a"].srv.URL + ", api_key: sk-ant-SECRET-a}\npools:\n  p: {members: [a]}\n"
		next, err := config.ParseConfig([]byte(y), nil)
		if err != nil {
			t.Fatal(err)
		}
		w.pool.Reload(next)
		st := w.pool.Status()
		if len(st.Sessions) != 1 || st.Sessions[0].Bindings["m"] != "a" {
			t.Fatalf("sessions after reload %+v", st.Sessions)
		}
		resp, _ := w.call("s2", true)
		if resp.Header.Get("X-Pool-Member") != "a" {
			t.Fatalf("s2 not reassigned: %v", resp.Header)
		}
		w.pool.Reload(cfg)
	})
}
