package pool

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/internal/testbed/testkit"
)

// TestLazyTimer: the relay's ping and idle deadlines (SPEC POOL-7: a ping
// after every PingInterval of silence, the idle error after
// stream_idle_timeout_ms of the member's silence) move with push instead of
// a Timer.Reset per event; fn must still run exactly when the
// last pushed deadline has passed, never before, and never after stop.
func TestLazyTimer(t *testing.T) {
	t.Run("POOL-7/lazy-deadline-runs-after-the-last-push", func(t *testing.T) {
		const d = 30 * time.Millisecond
		ran := make(chan time.Duration, 1)
		l := afterFuncLazy(d, func(*lazyTimer) { ran <- monoNow() })
		defer l.stop()
		pushed := monoNow()
		l.push(5 * d) // the timer fires at d, finds the deadline moved, sets itself again
		select {
		case at := <-ran:
			if at < pushed+5*d {
				t.Fatalf("ran %v after the push, before its deadline %v", at-pushed, 5*d)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("never ran")
		}
	})
	t.Run("POOL-7/lazy-deadline-pushed-far-does-not-run", func(t *testing.T) {
		ran := make(chan struct{}, 1)
		l := afterFuncLazy(10*time.Millisecond, func(*lazyTimer) { ran <- struct{}{} })
		defer l.stop()
		l.push(time.Hour)
		select {
		case <-ran:
			t.Fatal("ran though its deadline is an hour away")
		case <-time.After(300 * time.Millisecond):
		}
	})
	t.Run("POOL-7/lazy-deadline-again-and-stop", func(t *testing.T) {
		const d = 20 * time.Millisecond
		ran := make(chan int, 8)
		n := 0
		l := afterFuncLazy(d, func(l *lazyTimer) {
			n++
			ran <- n
			if n < 3 {
				l.again(d)
			}
		})
		for want := 1; want <= 3; want++ {
			select {
			case got := <-ran:
				if got != want {
					t.Fatalf("run %d, want %d", got, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("run %d never came", want)
			}
		}
		l.again(d) // stopped before its deadline: never runs
		l.stop()
		select {
		case got := <-ran:
			t.Fatalf("run %d after stop", got)
		case <-time.After(10 * d):
		}
	})
}

// BenchmarkStreamDeadlines is what moving a stream's ping and idle
// deadlines costs per relayed event with 256 streams' timers
// pending, from both cores: two time.Timer.Reset (before) against two
// lazyTimer.push (now).
func BenchmarkStreamDeadlines(b *testing.B) {
	const streams = 256
	b.Run("timer-reset", func(b *testing.B) {
		ts := make([]*time.Timer, 2*streams)
		for i := range ts {
			ts[i] = time.AfterFunc(time.Hour, func() {})
			defer ts[i].Stop()
		}
		b.ReportAllocs()
		cpu0 := testkit.ProcessCPU()
		defer func() { b.ReportMetric(float64(testkit.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op") }()
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := int(next.Add(1)) % streams
				ts[2*i].Reset(15 * time.Second)
				ts[2*i+1].Reset(time.Minute)
			}
		})
	})
	b.Run("lazy-push", func(b *testing.B) {
		ls := make([]*lazyTimer, 2*streams)
		for i := range ls {
			ls[i] = afterFuncLazy(time.Hour, func(*lazyTimer) {})
			defer ls[i].stop()
		}
		b.ReportAllocs()
		cpu0 := testkit.ProcessCPU()
		defer func() { b.ReportMetric(float64(testkit.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op") }()
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				i := int(next.Add(1)) % streams
				now := monoNow() // as the relay does
				ls[2*i].pushFrom(now, 15*time.Second)
				ls[2*i+1].pushFrom(now, time.Minute)
			}
		})
	})
}
