package pool

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// sseEvent is one Server-Sent Event as read from an upstream (WHATWG HTML
// §9.2 "Server-sent events"): the "event" field, the "data" lines joined by
// "\n", and the raw bytes as received, blank line included, so the event can
// be forwarded byte for byte.
type sseEvent struct {
	Name    string
	Data    []byte
	Raw     []byte
	Comment bool // only comment lines (":" keepalives); never visible output
}

// maxEventBytes bounds one event so a hostile upstream cannot make us buffer
// without limit.
const maxEventBytes = 8 << 20

var errEventTooLarge = errors.New("sse: event larger than 8 MiB")

// sseReader splits a stream into events. Lines end with "\n" or "\r\n".
// Next returns io.EOF at a clean end and io.ErrUnexpectedEOF when the stream
// stops inside an event.
type sseReader struct {
	br *bufio.Reader
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 32<<10)}
}

// Next reads the next event. The returned slices are owned by the caller.
func (r *sseReader) Next() (sseEvent, error) {
	var ev sseEvent
	var raw []byte
	fields := 0
	comments := 0
	for {
		line, err := r.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long line: collect it whole.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull && len(raw)+len(long) <= maxEventBytes {
				line, err = r.br.ReadSlice('\n')
				long = append(long, line...)
			}
			if err == bufio.ErrBufferFull {
				return sseEvent{}, errEventTooLarge
			}
			line = long
		}
		if len(raw)+len(line) > maxEventBytes {
			return sseEvent{}, errEventTooLarge
		}
		if err != nil {
			if err == io.EOF {
				if len(bytes.TrimSpace(raw)) == 0 && len(bytes.TrimSpace(line)) == 0 {
					return sseEvent{}, io.EOF
				}
				return sseEvent{}, io.ErrUnexpectedEOF
			}
			return sseEvent{}, err
		}
		raw = append(raw, line...)
		content := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(content) == 0 {
			if fields == 0 && comments == 0 {
				raw = raw[:0] // stray blank line between events
				continue
			}
			ev.Raw = raw
			ev.Comment = fields == 0
			return ev, nil
		}
		if content[0] == ':' {
			comments++
			continue
		}
		fields++
		name, value, found := bytes.Cut(content, []byte(":"))
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
	}
}

// maxSniffBlank bounds the blank lines skipped while sniffing (bytes).
const maxSniffBlank = 4 << 10

// sniffEventStream tells whether a body sent without the text/event-stream
// Content-Type is an event stream anyway: its first non-empty line starts
// with "event:", "data:" or ":" (WHATWG HTML §9.2.6). It only peeks, so
// every byte is still read by the SSE reader; it blocks until enough bytes
// arrive (bounded by the caller's first-output timeout). An empty body is
// not a stream (false, nil); a read error is returned.
func sniffEventStream(br *bufio.Reader) (bool, error) {
	skip := 0
	for skip <= maxSniffBlank {
		b, err := br.Peek(skip + 1)
		if len(b) <= skip {
			if err == io.EOF {
				return false, nil
			}
			return false, err
		}
		c := b[skip]
		if c == '\r' || c == '\n' {
			skip++
			continue
		}
		if c == ':' {
			return true, nil
		}
		for _, prefix := range []string{"data:", "event:", "data\n", "data\r"} {
			b, err := br.Peek(skip + len(prefix))
			if len(b) == skip+len(prefix) && string(b[skip:]) == prefix {
				return true, nil
			}
			if err != nil && err != io.EOF {
				return false, err
			}
		}
		return false, nil
	}
	return false, nil
}
