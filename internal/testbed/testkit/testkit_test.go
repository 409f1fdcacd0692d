package testkit

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestClock(t *testing.T) {
	c := NewClock(Epoch)
	if got := c.Now(); !got.Equal(Epoch) {
		t.Fatalf("start %v, want %v", got, Epoch)
	}
	c.Advance(90 * time.Second)
	c.Advance(-30 * time.Second)
	if got := c.Now().Sub(Epoch); got != time.Minute {
		t.Fatalf("moved %v, want 1m", got)
	}
}

// recorder is a testing.TB that records a Fatalf instead of stopping.
type recorder struct {
	testing.TB
	failed atomic.Bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed.Store(true)
	r.msg = format
}

func TestWaitFor(t *testing.T) {
	n := 0
	WaitFor(t, time.Second, "the third poll", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("cond ran %d times, want 3", n)
	}
	r := &recorder{TB: t}
	start := time.Now()
	WaitFor(r, 50*time.Millisecond, "never", func() bool { return r.failed.Load() })
	if !r.failed.Load() || r.msg != "timed out after %v waiting for %s" {
		t.Fatalf("no timeout failure (%q)", r.msg)
	}
	if el := time.Since(start); el < 50*time.Millisecond || el > 5*time.Second {
		t.Fatalf("gave up after %v, want about 50 ms", el)
	}
}

func TestServe(t *testing.T) {
	var addr string
	t.Run("serves-until-cleanup", func(t *testing.T) {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
		addr = Serve(t, srv)
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" {
			t.Fatalf("got %q", b)
		}
		http.DefaultClient.CloseIdleConnections()
	})
	if _, err := http.Get("http://" + addr + "/"); err == nil {
		t.Fatal("server still answers after its test ended")
	}
}

func TestServeConns(t *testing.T) {
	t.Run("serves-each-connection-and-cleanup-closes-them", func(t *testing.T) {
		gone := make(chan struct{})
		var addr string
		t.Run("world", func(t *testing.T) {
			addr = ServeConns(t, func(c net.Conn) {
				c.Write([]byte("hi"))
				io.Copy(io.Discard, c) // returns only when the cleanup closes c
				close(gone)
			})
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			b := make([]byte, 2)
			if _, err := io.ReadFull(c, b); err != nil || string(b) != "hi" {
				t.Fatalf("%q %v", b, err)
			}
		})
		select {
		case <-gone:
		default:
			t.Fatal("the serve call did not return by the end of the cleanup")
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Fatal("the listener is still open after the cleanup")
		}
	})
}
