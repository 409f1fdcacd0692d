package api

import (
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// collectStream feeds evs to a Collector of api and ends it.
func collectStream(t *testing.T, api apikind.Kind, evs []sseEv) (*Collector, *neutral.Error, error) {
	t.Helper()
	c := NewCollector(api)
	for _, e := range evs {
		if se, err := c.Feed(e.name, []byte(e.data)); se != nil || err != nil {
			return c, se, err
		}
	}
	se, err := c.End()
	return c, se, err
}

// TestCollectorBuildsTheAnswerOfEveryAPIsStream: the same answer streamed
// in each API collects to the same parts and usage (SPEC POOL-7b: a
// non-streamed call served from a member's stream).
func TestCollectorBuildsTheAnswerOfEveryAPIsStream(t *testing.T) {
	type shape struct {
		Kind             neutral.Kind
		Text, Name, Args string
	}
	shapes := func(r *neutral.Response) []shape {
		var out []shape
		for _, p := range r.Parts {
			out = append(out, shape{p.Kind, p.Text, p.Name, p.Args})
		}
		return out
	}
	for _, f := range streamFeatures {
		ref, se, err := collectStream(t, apikind.Anthropic, f.forms[apikind.Anthropic])
		if se != nil || err != nil || !ref.Finished() {
			t.Fatalf("%s: anthropic reference: %v %v", f.name, se, err)
		}
		want := ref.Response()
		for _, api := range apis {
			t.Run("POOL-7b/collect/"+f.name+"/"+string(api), func(t *testing.T) {
				c, se, err := collectStream(t, api, f.forms[api])
				if se != nil || err != nil || !c.Finished() {
					t.Fatalf("collect: %v %v finished=%v", se, err, c.Finished())
				}
				got := c.Response()
				if g, w := shapes(got), shapes(want); len(g) != len(w) {
					t.Fatalf("parts %+v, want %+v", g, w)
				} else {
					for i := range g {
						if g[i] != w[i] {
							t.Errorf("part %d %+v, want %+v", i, g[i], w[i])
						}
					}
				}
				if got.Usage.Input != want.Usage.Input || got.Usage.Output != want.Usage.Output || got.Usage.CacheRead != want.Usage.CacheRead {
					t.Errorf("usage %+v, want %+v", got.Usage, want.Usage)
				}
			})
		}
	}
}

func TestCollectorStreamEnds(t *testing.T) {
	t.Run("POOL-7b/collect/text-and-usage-of-the-stream", func(t *testing.T) {
		c, se, err := collectStream(t, apikind.Anthropic, streamFeatures[0].forms[apikind.Anthropic])
		if se != nil || err != nil {
			t.Fatal(se, err)
		}
		r := c.Response()
		if len(r.Parts) != 1 || r.Parts[0].Text != "Hello ✓ \"q\"" || r.ID != "msg_1" || r.Stop != neutral.StopEnd {
			t.Fatalf("answer %+v", r)
		}
		if u := r.Usage; u.Input != 10 || u.Output != 5 || u.CacheRead != 90 {
			t.Fatalf("usage %+v, want input 10, output 5, cache read 90", u)
		}
	})
	t.Run("POOL-7b/collect/error-event-mid-stream", func(t *testing.T) {
		evs := append(streamFeatures[0].forms[apikind.Anthropic][:3:3],
			ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`))
		_, se, err := collectStream(t, apikind.Anthropic, evs)
		if err != nil || se == nil || se.Type != "overloaded_error" || se.Message != "busy" || se.Status != 529 {
			t.Fatalf("in-stream error %+v, err %v; want overloaded_error 529", se, err)
		}
	})
	t.Run("POOL-7b/collect/cut-before-the-end", func(t *testing.T) {
		c, se, err := collectStream(t, apikind.Anthropic, streamFeatures[0].forms[apikind.Anthropic][:3])
		if err == nil || se != nil || c.Finished() {
			t.Fatalf("a cut stream collected: %v %v", se, err)
		}
	})
}
