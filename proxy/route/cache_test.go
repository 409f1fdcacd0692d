package route

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

func TestCache(t *testing.T) {
	t.Run("ORD-4/put-get-ttl", func(t *testing.T) {
		clk := testkit.NewClock(testkit.Epoch)
		c := NewCacheClock(1000, time.Minute, clk.Now)
		c.Put("a.com", "g:1")
		if k, ok := c.Get("a.com"); !ok || k != "g:1" {
			t.Fatalf("Get = %q %v", k, ok)
		}
		clk.Advance(59 * time.Second)
		if _, ok := c.Get("a.com"); !ok {
			t.Fatal("expired early")
		}
		clk.Advance(time.Second)
		if _, ok := c.Get("a.com"); ok {
			t.Fatal("entry outlived its TTL")
		}
		if s := c.Snapshot(); len(s) != 0 {
			t.Fatalf("expired entry in snapshot: %v", s)
		}
	})
	t.Run("ORD-4/fresh-until-the-entry-changes", func(t *testing.T) {
		// Fresh(gen of a PutAt) says the entry that put made is still
		// there with its key (the plain path skips its next put
		// then); every way an entry can go or change ends it.
		clk := testkit.NewClock(testkit.Epoch)
		c := NewCacheClock(2, time.Minute, clk.Now)
		for _, tc := range []struct {
			name   string
			change func()
		}{
			{"removed", func() { c.Remove("a.com") }},
			{"removed-after-a-failure", func() { c.RemoveIf("a.com", "g:1") }},
			{"put-with-another-key", func() { c.Put("a.com", "g:2") }},
			{"evicted", func() { c.Put("b.com", "g:1"); c.Put("c.com", "g:1") }},
			{"expired", func() { clk.Advance(time.Minute); c.Get("a.com") }},
		} {
			gen := c.PutAt("a.com", "g:1", clk.Now())
			if !c.Fresh(gen) {
				t.Fatalf("%s: not fresh right after the put", tc.name)
			}
			c.Put("a.com", "g:1")      // another connection's put of the same entry
			c.RemoveIf("a.com", "g:9") // another candidate's failure: nothing removed
			c.Get("a.com")
			if !c.Fresh(gen) {
				t.Fatalf("%s: not fresh after changes that keep the entry", tc.name)
			}
			tc.change()
			if c.Fresh(gen) {
				t.Fatalf("%s: still fresh", tc.name)
			}
		}
		if d := NewCache(0, time.Minute); d.Fresh(d.PutAt("a.com", "g:1", time.Now())) {
			t.Fatal("a disabled cache is fresh")
		}
	})
	t.Run("ORD-4/1001st-host-evicts-least-recently-used", func(t *testing.T) {
		c := NewCache(1000, time.Hour) // real clock: TTL far beyond the test
		for i := range 1000 {
			c.Put(fmt.Sprintf("h%d.com", i), "g:1")
		}
		c.Get("h0.com") // h0 is now recent; h1 is least recently used
		c.Put("h1000.com", "g:2")
		if _, ok := c.Get("h1.com"); ok {
			t.Error("least recently used host h1 not evicted")
		}
		for _, h := range []string{"h0.com", "h2.com", "h1000.com"} {
			if _, ok := c.Get(h); !ok {
				t.Errorf("%s evicted", h)
			}
		}
		if n := len(c.Snapshot()); n != 1000 {
			t.Errorf("size %d, want 1000", n)
		}
	})
	t.Run("ORD-4/remove-if-only-same-candidate", func(t *testing.T) {
		c := NewCache(10, time.Hour)
		c.Put("a.com", "g:2")
		if c.RemoveIf("a.com", "g:1") {
			t.Error("removed an entry that maps to another candidate")
		}
		if k, _ := c.Get("a.com"); k != "g:2" {
			t.Errorf("entry = %q", k)
		}
		if !c.RemoveIf("a.com", "g:2") {
			t.Error("RemoveIf did not remove")
		}
		c.Put("b.com", "direct")
		c.Remove("b.com")
		if _, ok := c.Get("b.com"); ok {
			t.Error("Remove did not remove")
		}
	})
	t.Run("ORD-4/snapshot-most-recent-first", func(t *testing.T) {
		clk := testkit.NewClock(testkit.Epoch)
		c := NewCacheClock(10, time.Minute, clk.Now)
		c.Put("a.com", "g:1")
		clk.Advance(time.Second)
		c.Put("b.com", "direct")
		s := c.Snapshot()
		if len(s) != 2 || s[0].Host != "b.com" || s[0].Key != "direct" || !s[0].Expires.Equal(clk.Now().Add(time.Minute)) || s[1].Host != "a.com" {
			t.Fatalf("snapshot %+v", s)
		}
	})
	t.Run("ORD-4/disabled", func(t *testing.T) {
		for _, c := range []*Cache{NewCache(0, time.Minute), NewCache(10, 0)} {
			c.Put("a.com", "g:1")
			if _, ok := c.Get("a.com"); ok || c.Snapshot() != nil || c.RemoveIf("a.com", "g:1") {
				t.Error("disabled cache stored an entry")
			}
			c.Remove("a.com")
		}
	})
	t.Run("ORD-4/concurrent", func(t *testing.T) {
		c := NewCache(50, time.Minute)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 300 {
					h := fmt.Sprintf("h%d", (i*7+j)%80)
					c.Put(h, "g:1")
					c.Get(h)
					c.RemoveIf(h, "g:2")
					if j%100 == 0 {
						c.Snapshot()
					}
				}
			}()
		}
		wg.Wait()
		if n := len(c.Snapshot()); n > 50 {
			t.Fatalf("size %d > 50", n)
		}
	})
}
