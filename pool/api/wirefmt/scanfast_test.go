package wirefmt

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// FuzzLineEnd holds lineEnd (SPEC POOL-7: the SSE reader's line split)
// to bytes.IndexAny(b, "\r\n") on any input.
func FuzzLineEnd(f *testing.F) {
	for _, s := range []string{"", "abc", "a\nb", "a\rb", "a\r\nb", "abc\n\r", "\n", "\r", "0123456789abcdef\r0123\n", "no line end at all, quite long"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for i := range len(b) + 1 {
			if got, want := lineEnd(b[i:]), bytes.IndexAny(b[i:], "\r\n"); got != want {
				t.Fatalf("POOL-7/sse-line-end: lineEnd(%q) = %d, bytes.IndexAny says %d", b[i:], got, want)
			}
		}
	})
}

// FuzzSSEReaderShared: a reader told to Share returns the events an owning
// reader returns (SPEC POOL-7: the relay forwards each event's bytes as
// they came), in reads of any sizes; a caller's append to Data or Raw does
// not reach the reader's next event.
func FuzzSSEReaderShared(f *testing.F) {
	for _, s := range []string{"event: a\ndata: x\n\nevent: b\ndata: yy\n\n", "data: a\r\rdata: b\r\n\r\n", "data: a\ndata: b\n\ndata: c\n\n",
		": c\n\ndata: [DONE]", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\"}\n\nevent: ping\ndata: {}\n\n"} {
		f.Add([]byte(s), []byte{3, 7, 1})
	}
	f.Fuzz(func(t *testing.T, in, sizes []byte) {
		got, want := NewSSEReader(&ChunkReader{Data: in, Sizes: sizes}), NewSSEReader(&ChunkReader{Data: in, Sizes: sizes})
		got.Share()
		for i := 0; i < 1<<12; i++ {
			g, gerr := got.Next()
			w, werr := want.Next()
			if gerr != werr || g.Name != w.Name || g.Comment != w.Comment || !bytes.Equal(g.Raw, w.Raw) ||
				!bytes.Equal(g.Data, w.Data) || (g.Data == nil) != (w.Data == nil) {
				t.Fatalf("POOL-7/shared-sse-events: event %d of %q: got %+v %v, want %+v %v", i, in, g, gerr, w, werr)
			}
			if gerr != nil {
				break
			}
			_ = append(g.Data, "XX"...)
			_ = append(g.Raw, "YY"...)
		}
	})
}

// TestHugeStringAndDeepNesting: a 4 MiB string full of escapes passes the
// top-level check, and nesting beyond jsonscan.MaxSkipDepth is refused.
func TestHugeStringAndDeepNesting(t *testing.T) {
	t.Run("POOL-17/huge-string-and-deep-nesting", func(t *testing.T) {
		big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat(`ab\"c\\✓`, 1<<17) + `"}]}`
		if err := CheckTopLevel([]byte(big)); err != nil {
			t.Fatalf("4 MiB escaped string: %v", err)
		}
		deep := strings.Repeat(`{"a":[`, 200) + `"x"` + strings.Repeat(`]}`, 200)
		if jsonscan.SkipValue([]byte(deep), 0) != -1 {
			t.Fatal("nesting beyond jsonscan.MaxSkipDepth accepted")
		}
	})
}
