package wirefmt

import (
	"bytes"
	"io"
	"testing"
)

// ChunkReader returns data in reads of the sizes in sizes (cycled); a read
// while forbid is set is recorded in read.
type ChunkReader struct {
	Data          []byte
	Sizes         []byte
	n             int
	forbid, badRd bool
}

func (r *ChunkReader) Read(p []byte) (int, error) {
	if r.forbid {
		r.badRd = true
	}
	if len(r.Data) == 0 {
		return 0, io.EOF
	}
	k := 1
	if len(r.Sizes) > 0 {
		k = int(r.Sizes[r.n%len(r.Sizes)])%64 + 1
	}
	r.n++
	k = min(k, len(p), len(r.Data))
	copy(p, r.Data[:k])
	r.Data = r.Data[k:]
	return k, nil
}

// FuzzEventBuffered: whenever EventBuffered says a whole event is buffered,
// the next Next returns an event without reading from the stream (SPEC
// POOL-7: the pool writes such an event without a flush only because the
// next one is already there; a wrong true would hold an event back until
// the upstream sends more).
func FuzzEventBuffered(f *testing.F) {
	for _, s := range []string{"event: a\ndata: x\n\nevent: b\ndata: y\n\n", "data: a\r\rdata: b\r\n\r\n", "\n\n\ndata: x\n\n",
		": c\n\n: d\n\n", "data: a\r\n\r\n\r\ndata: b\r\n\r\n", "data: x\r\n\r", "data: x\n\r\n\rdata: y\r\r"} {
		f.Add([]byte(s), []byte{3, 7, 1})
		f.Add([]byte(s), []byte{63})
	}
	f.Fuzz(func(t *testing.T, in, sizes []byte) {
		src := &ChunkReader{Data: in, Sizes: sizes}
		rd := NewSSEReader(src)
		ref := NewSSEReader(bytes.NewReader(in))
		for i := 0; i < 1<<12; i++ {
			buffered := rd.EventBuffered()
			src.forbid = buffered
			ev, err := rd.Next()
			src.forbid = false
			if buffered && (src.badRd || err != nil) {
				t.Fatalf("event %d of %q (reads %v): EventBuffered was true, but Next read (%v) or failed (%v)", i, in, sizes, src.badRd, err)
			}
			want, werr := ref.Next()
			if err != werr || ev.Name != want.Name || !bytes.Equal(ev.Data, want.Data) {
				t.Fatalf("event %d of %q: %+v %v, want %+v %v", i, in, ev, err, want, werr)
			}
			if err != nil {
				return
			}
		}
	})
}

// TestEventBuffered names the cases: SPEC POOL-7.
func TestEventBuffered(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     bool // after the first event
	}{
		{"POOL-7/next-event-whole", "data: a\n\ndata: b\n\n", true},
		{"POOL-7/next-event-partial", "data: a\n\ndata: b\n", false},
		{"POOL-7/only-blank-lines", "data: a\n\n\n\n", false},
		{"POOL-7/comment-event", "data: a\n\n: ping\n\n", true},
		{"POOL-7/crlf", "data: a\r\n\r\ndata: b\r\n\r\n", true},
		{"POOL-7/bare-cr", "data: a\r\rdata: b\r\r", true},
		{"POOL-7/nothing-buffered", "data: a\n\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rd := NewSSEReader(bytes.NewReader([]byte(c.in)))
			if _, err := rd.Next(); err != nil {
				t.Fatal(err)
			}
			if got := rd.EventBuffered(); got != c.want {
				t.Fatalf("EventBuffered = %v, want %v", got, c.want)
			}
		})
	}
}

// TestReaderRelease: a released reader's buffer serves the next stream, and
// neither stream sees the other's bytes (SPEC POOL-19 framing per stream,
// POOL-15: one member's answer never reaches another call).
func TestReaderRelease(t *testing.T) {
	t.Run("POOL-19/released-buffer-serves-the-next-stream-alone", func(t *testing.T) {
		a := NewSSEReader(bytes.NewReader([]byte("event: one\ndata: first\n\nevent: two\ndata: left-behind\n\n")))
		ev, err := a.Next()
		if err != nil || string(ev.Data) != "first" {
			t.Fatalf("first event %q, %v", ev.Data, err)
		}
		if !a.EventBuffered() {
			t.Fatal("second event not buffered")
		}
		a.Release()
		a.Release() // twice is harmless
		if _, err := a.Next(); err != io.EOF {
			t.Fatalf("Next after Release: %v, want io.EOF", err)
		}
		if a.EventBuffered() {
			t.Fatal("EventBuffered after Release")
		}
		b := NewSSEReader(bytes.NewReader([]byte("data: second\n\n")))
		defer b.Release()
		ev2, err := b.Next()
		if err != nil || string(ev2.Data) != "second" || ev2.Name != "" {
			t.Fatalf("next stream's event %+v, %v", ev2, err)
		}
		if _, err := b.Next(); err != io.EOF {
			t.Fatalf("next stream after its event: %v, want io.EOF (nothing of the first)", err)
		}
		if string(ev.Raw) != "event: one\ndata: first\n\n" {
			t.Fatalf("an event read before Release changed: %q", ev.Raw)
		}
	})
}
