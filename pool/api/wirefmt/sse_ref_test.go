package wirefmt

import (
	"bytes"
	"io"
	"testing"
)

// refSSEReader is the SSE reader with a line, raw and data allocation
// per event; its
// line reading (readLine, unchanged) is shared.
type refSSEReader struct{ *SSEReader }

// Next is SSEReader.Next in its plain form (a line, raw and data
// allocation per event), kept as the reference of FuzzSSEReaderMatchesReference.
func (r *refSSEReader) Next() (SSEEvent, error) {
	if r.eof {
		return SSEEvent{}, io.EOF
	}
	var ev SSEEvent
	var raw, line []byte
	fields, comments := 0, 0
	for {
		var end []byte
		var err error
		line, end, err = r.SSEReader.readLine(line[:0], maxEventBytes-len(raw))
		if err != nil && err != io.EOF {
			return SSEEvent{}, err
		}
		if len(raw)+len(line)+len(end) > maxEventBytes {
			return SSEEvent{}, errEventTooLarge
		}
		if err == io.EOF {
			r.eof = true
			if len(line) > 0 {
				fields, comments = refParseField(&ev, line, fields, comments)
				raw = append(append(raw, line...), '\n')
			}
			if fields == 0 && comments == 0 {
				return SSEEvent{}, io.EOF
			}
			ev.Raw, ev.Comment = append(raw, '\n'), fields == 0
			return ev, nil
		}
		if len(line) == 0 {
			if fields == 0 && comments == 0 {
				raw = raw[:0] // stray blank line between events
				continue
			}
			ev.Raw, ev.Comment = append(raw, end...), fields == 0
			return ev, nil
		}
		raw = append(append(raw, line...), end...)
		fields, comments = refParseField(&ev, line, fields, comments)
	}
}

// refParseField is the reference parseField.
func refParseField(ev *SSEEvent, line []byte, fields, comments int) (int, int) {
	if line[0] == ':' {
		return fields, comments + 1
	}
	name, value, found := bytes.Cut(line, []byte(":"))
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) {
	case "event":
		ev.Name = string(value)
	case "data":
		if ev.Data != nil {
			ev.Data = append(ev.Data, '\n')
		} else {
			ev.Data = []byte{}
		}
		ev.Data = append(ev.Data, value...)
	}
	return fields + 1, comments
}

// FuzzSSEReaderMatchesReference: the reader that reuses its line and raw
// buffers and slices Data out of Raw returns exactly the events of the
// reference reader (names, data, raw bytes, comments, errors) — SPEC
// POOL-19's grammar is unchanged by the reader's buffer reuse.
func FuzzSSEReaderMatchesReference(f *testing.F) {
	for _, s := range []string{"event: a\ndata: x\n\n", "data: a\r\rdata: b\r\n\r\n", "data: [DONE]", "event: e\r\ndata: x\r\n", ": c\n\n",
		"data: 1\r\n\r\n", "\n\n\nevent: e", "data:\n\n", "event:x\ndata:y\nid: 3\nretry: 5\n\n", "data: a\ndata: b\ndata: c\n\nevent: message_stop\ndata: {}\n\n",
		"data\n\nevent\n\n", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\"}\n\nevent: ping\ndata: {}\n\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, want := NewSSEReader(bytes.NewReader(in)), &refSSEReader{NewSSEReader(bytes.NewReader(in))}
		var prev []SSEEvent
		for i := 0; i < 1<<12; i++ {
			g, gerr := got.Next()
			w, werr := want.Next()
			if gerr != werr || g.Name != w.Name || g.Comment != w.Comment || !bytes.Equal(g.Raw, w.Raw) ||
				!bytes.Equal(g.Data, w.Data) || (g.Data == nil) != (w.Data == nil) {
				t.Fatalf("event %d of %q: got %+v %v, want %+v %v", i, in, g, gerr, w, werr)
			}
			if gerr != nil {
				break
			}
			prev = append(prev, g)
			g.Data = append(g.Data, "XX"...) // a caller's append must not reach Raw
			if !bytes.Equal(g.Raw, w.Raw) {
				t.Fatalf("appending to Data changed Raw: %q", g.Raw)
			}
		}
		for _, p := range prev { // earlier events are not overwritten by later reads
			if len(p.Data) > 0 && !bytes.Contains(p.Raw, p.Data) && !bytes.Contains(p.Data, []byte("\n")) {
				t.Fatalf("event data %q no longer in its raw %q", p.Data, p.Raw)
			}
		}
	})
}
