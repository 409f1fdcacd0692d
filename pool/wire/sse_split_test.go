package wire

import (
	"bytes"
	"testing"
	"testing/iotest"
)

// FuzzSSEReaderSplitAtEveryByte: an event stream read one byte per Read
// (every event, line and CRLF split at every boundary) gives the events of
// the same stream read at once: names, data, comment-ness and errors equal,
// raw bytes equal but for a CRLF whose LF came in a later read (forwarded
// as LF). SPEC POOL-7: events pass through intact; 7b37323 made Next reuse
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
