package wirefmt

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// FuzzSniffEventStream checks SniffEventStream against a direct reading of
// the rule (first non-empty line starts with "event:", "data:" or ":"; a
// bare "data" line counts) and that it consumes nothing.
func FuzzSniffEventStream(f *testing.F) {
	for _, s := range []string{"", "\n", "data: x\n\n", "event: a\ndata: b\n\n", ": ping\n\n", "\r\n\r\ndata:x", "<html>",
		"{\"type\":\"message\"}", "dat", "data", "data\n\n", "eventx", " data: x", "\n\n\nevent:"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(in), 32<<10)
		got, err := SniffEventStream(br)
		if err != nil {
			t.Fatalf("error on an in-memory body: %v", err)
		}
		rest := bytes.TrimLeft(in, "\r\n")
		skipped := len(in) - len(rest)
		want := skipped <= maxSniffBlank && (bytes.HasPrefix(rest, []byte(":")) || bytes.HasPrefix(rest, []byte("data:")) ||
			bytes.HasPrefix(rest, []byte("event:")) || bytes.HasPrefix(rest, []byte("data\n")) || bytes.HasPrefix(rest, []byte("data\r")))
		if got != want {
			t.Fatalf("sniff(%q) = %v, want %v", in, got, want)
		}
		all, _ := io.ReadAll(br)
		if !bytes.Equal(all, in) {
			t.Fatal("sniff consumed bytes")
		}
	})
}
