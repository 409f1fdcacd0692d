package wirefmt

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzSSEReaderSplitAtEveryByte: an event stream read one byte per Read
// (every event, line and CRLF split at every boundary) gives the events of
// the same stream read at once: names, data, comment-ness and errors equal,
// raw bytes equal but for a CRLF whose LF came in a later read (forwarded
// as LF). SPEC POOL-7: events pass through intact, though Next reuses
// its scratch buffers across events.
func FuzzSSEReaderSplitAtEveryByte(f *testing.F) {
	for _, s := range []string{"event: a\ndata: x\n\n", "data: a\r\rdata: b\r\n\r\n", "data: [DONE]", "event: e\r\ndata: x\r\n",
		": c\n\n", "data: a\ndata: b\ndata: c\n\nevent: message_stop\ndata: {}\n\n", "data:\r\n\r\ndata: y\r\n\r\n",
		"event: content_block_delta\r\ndata: {\"t\":\"\\u2028\"}\r\n\r\n"} {
		f.Add([]byte(s))
	}
	norm := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")) }
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, split := NewSSEReader(bytes.NewReader(in)), NewSSEReader(iotest.OneByteReader(bytes.NewReader(in)))
		for i := 0; i < 1<<12; i++ {
			w, werr := whole.Next()
			g, gerr := split.Next()
			if gerr != werr || g.Name != w.Name || g.Comment != w.Comment || !bytes.Equal(g.Data, w.Data) ||
				(g.Data == nil) != (w.Data == nil) || !bytes.Equal(norm(g.Raw), norm(w.Raw)) {
				t.Fatalf("event %d of %q: split %+v %v, whole %+v %v", i, in, g, gerr, w, werr)
			}
			if gerr != nil {
				return
			}
		}
	})
}

// TestSSELineEndsSplitAcrossReads: CR-only, CRLF and LF line ends, each split at every
// read boundary, and a data line longer than the reader's 32 KiB buffer,
// give the same events as one read.
func TestSSELineEndsSplitAcrossReads(t *testing.T) {
	t.Run("POOL-7/line-ends-split-across-reads", func(t *testing.T) {
		long := strings.Repeat("x", 40<<10)
		for _, end := range []string{"\n", "\r", "\r\n"} {
			in := "event: a" + end + "data: 1" + end + end + "data: " + long + end + "data: 2" + end + end + ": c" + end + end
			for _, chunk := range []int{1, 2, 3, 7, 8, 9, 4095, 32 << 10} {
				whole := NewSSEReader(strings.NewReader(in))
				split := NewSSEReader(iotest.HalfReader(&chunked{b: []byte(in), n: chunk}))
				for k := 0; ; k++ {
					w, werr := whole.Next()
					g, gerr := split.Next()
					if werr != gerr || g.Name != w.Name || !bytes.Equal(g.Data, w.Data) || g.Comment != w.Comment {
						t.Fatalf("end %q chunk %d event %d: split %q %v, whole %q %v", end, chunk, k, g.Data, gerr, w.Data, werr)
					}
					if werr != nil {
						break
					}
					if k == 1 && len(w.Data) != len(long)+len("\n2") {
						t.Fatalf("end %q: the long event has %d data bytes", end, len(w.Data))
					}
				}
				whole.Release()
				split.Release()
			}
		}
	})
}

// chunked reads b n bytes at a time.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}
