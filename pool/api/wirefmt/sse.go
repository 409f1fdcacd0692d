package wirefmt

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"
)

// OpenaiPing is an SSE comment: ignored by every client, never output.
var OpenaiPing = []byte(": ping\n\n")

// SSEEvent is one Server-Sent Event as read from an upstream (WHATWG HTML
// §9.2.6 "Interpreting an event stream"): the "event" field, the "data"
// lines joined by "\n", and the raw bytes as received, blank line included,
// so the event can be forwarded as sent.
type SSEEvent struct {
	Name    string
	Data    []byte
	Raw     []byte
	Comment bool // only comment lines (":" keepalives); never visible output
}

// maxEventBytes bounds one event so a hostile upstream cannot make us buffer
// without limit.
const maxEventBytes = 8 << 20

var errEventTooLarge = errors.New("sse: event larger than 8 MiB")

// SSEReader splits a stream into events per the SSE grammar (WHATWG HTML
// §9.2.6, SPEC POOL-19): a line ends with CRLF, LF or a bare CR; a line
// starting with ":" is a comment; "field:value" drops one space after the
// colon ("data:x" and "data: x" are the same); a field name alone has the
// empty value; several "data" lines join with "\n"; a blank line
// dispatches the event. Unlike a browser, an event pending when the
// stream ends (no blank line after the last event, or no line end at all)
// is dispatched: servers close right after "data: [DONE]" or
// "event: message_stop…" without the final blank line, and the SDKs read
// it. Raw keeps the event's bytes, except that a bare CR line end is
// written as LF and an event completed by EOF gets its missing line ends,
// so the client always receives a well-framed event. Next returns io.EOF
// after the last event.
type SSEReader struct {
	br     *bufio.Reader
	skipLF bool // the last line ended with CR: a following LF belongs to it
	eof    bool
	shared bool // Share: events are not copied out of raw
	// line and raw are scratch space reused across events (Next).
	line, raw []byte
}

// sseBuffers keeps the readers' 32 KiB buffers between streams (Release):
// a stream's largest allocation, zeroed on every make.
var sseBuffers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// NewSSEReader reads events from r through a 32 KiB buffer.
func NewSSEReader(r io.Reader) *SSEReader {
	br := sseBuffers.Get().(*bufio.Reader)
	br.Reset(r)
	return &SSEReader{br: br}
}

// Release hands the reader's buffer to the next stream once nothing reads
// from r any more (Next is then io.EOF, EventBuffered false). Events Next
// returned stay valid: they never share the buffer.
func (r *SSEReader) Release() {
	if r.br == nil {
		return
	}
	r.br.Reset(nil) // drops r's reader and what was buffered
	sseBuffers.Put(r.br)
	r.br, r.eof = nil, true
}

// readLine appends the next line (without its end) to line and returns it,
// the line end as forwarded ("\n", "\r\n"; nil at EOF), and the error.
func (r *SSEReader) readLine(line []byte, budget int) ([]byte, []byte, error) {
	for {
		if r.skipLF {
			b, err := r.br.Peek(1)
			if err != nil {
				return line, nil, err
			}
			r.skipLF = false
			if b[0] == '\n' {
				_, _ = r.br.Discard(1)
			}
		}
		n := r.br.Buffered()
		if n == 0 {
			n = 1 // block for more input
		}
		buf, err := r.br.Peek(n)
		if i := lineEnd(buf); i >= 0 {
			c := buf[i]
			line = append(line, buf[:i]...)
			_, _ = r.br.Discard(i + 1)
			if c == '\n' {
				return line, lf, nil
			}
			// CR: CRLF when the LF is already here; else decide on the next
			// read, so a bare-CR stream is never held back for a byte.
			if b, _ := r.br.Peek(min(1, r.br.Buffered())); len(b) == 1 && b[0] == '\n' {
				_, _ = r.br.Discard(1)
				return line, crlf, nil
			}
			if r.br.Buffered() == 0 {
				r.skipLF = true
			}
			return line, lf, nil
		}
		line = append(line, buf...)
		_, _ = r.br.Discard(len(buf))
		if len(line) > budget {
			return nil, nil, errEventTooLarge
		}
		if err != nil {
			return line, nil, err
		}
	}
}

var lf, crlf = []byte("\n"), []byte("\r\n")

// lineEnd is bytes.IndexAny(b, "\r\n"): the first CR or LF, or -1. Two
// bytes.IndexByte scans (vectorised) instead of IndexAny's test of every
// byte against a set: it runs over every byte of every event.
func lineEnd(b []byte) int {
	n := bytes.IndexByte(b, '\n')
	if n < 0 {
		n = len(b)
	}
	if r := bytes.IndexByte(b[:n], '\r'); r >= 0 {
		return r
	}
	if n == len(b) {
		return -1
	}
	return n
}

// Next reads the next event. The returned slices are owned by the caller
// (until Share: then they are the reader's, valid until the next Next):
// Raw is one new allocation per event, Data a slice of it (capacity
// limited, so appending to Data never writes into Raw) unless the event has
// several data lines, and Name is interned for the APIs' event names — the
// per-event cost of every pool stream.
func (r *SSEReader) Next() (SSEEvent, error) {
	if r.eof {
		return SSEEvent{}, io.EOF
	}
	var ev SSEEvent
	raw, line := r.raw[:0], r.line[:0]
	defer func() {
		if cap(raw) <= maxKeptScratch && cap(line) <= maxKeptScratch {
			r.raw, r.line = raw[:0], line[:0]
		}
	}()
	var d dataSpan
	fields, comments := 0, 0
	for {
		var end []byte
		var err error
		line, end, err = r.readLine(line[:0], maxEventBytes-len(raw))
		if err != nil && err != io.EOF {
			return SSEEvent{}, err
		}
		if len(raw)+len(line)+len(end) > maxEventBytes {
			return SSEEvent{}, errEventTooLarge
		}
		if err == io.EOF {
			r.eof = true
			if len(line) > 0 {
				at := len(raw)
				raw = append(append(raw, line...), '\n')
				fields, comments = parseField(&ev, &d, raw, at, line, fields, comments)
			}
			if fields == 0 && comments == 0 {
				return SSEEvent{}, io.EOF
			}
			raw = append(raw, '\n')
			return d.dispatch(ev, raw, fields == 0, r.shared), nil
		}
		if len(line) == 0 {
			if fields == 0 && comments == 0 {
				raw = raw[:0] // stray blank line between events
				continue
			}
			raw = append(raw, end...)
			return d.dispatch(ev, raw, fields == 0, r.shared), nil
		}
		at := len(raw)
		raw = append(append(raw, line...), end...)
		fields, comments = parseField(&ev, &d, raw, at, line, fields, comments)
	}
}

// Share makes the events Next returns from now on share the reader's
// scratch space: their Raw and Data (one data line) are valid only until
// the next call of Next, and no longer cost an allocation each.
// For a relay that is done with each event before it reads the next.
func (r *SSEReader) Share() { r.shared = true }

// EventBuffered reports whether a whole event is already in the reader's
// buffer: the next Next returns it without reading from the stream. A relay
// may then write the event it holds without a flush and flush with the last
// event before the reader would block (events are still flushed as they
// arrive; only what arrived together is written together).
// false when unsure: a flush too many is always safe.
func (r *SSEReader) EventBuffered() bool {
	if r.eof {
		return false
	}
	n := r.br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := r.br.Peek(n)
	i := 0
	if r.skipLF && b[0] == '\n' {
		i = 1 // the LF of the last line's CRLF
	}
	content := false // a non-blank line is pending: a blank line dispatches it
	for i < len(b) {
		j := lineEnd(b[i:])
		if j < 0 {
			return false // a line still without its end
		}
		if j > 0 {
			content = true
		} else if content {
			return true
		}
		j += i
		if b[j] == '\r' && j+1 < len(b) && b[j+1] == '\n' {
			j++
		}
		i = j + 1
	}
	return false
}

// maxKeptScratch bounds the line and raw buffers an SSEReader keeps between
// events (one huge event does not pin its memory for the stream's life).
const maxKeptScratch = 64 << 10

// dataSpan is where an event's data is: the one data line's value as an
// offset into the event's raw bytes, or the joined value of several.
type dataSpan struct {
	lines  int
	off, n int    // first data value in raw
	joined []byte // several data lines, joined with "\n"
}

// dispatch returns ev with Raw a copy of raw (raw itself, capacity
// limited, when shared) and Data from d.
func (d *dataSpan) dispatch(ev SSEEvent, raw []byte, comment, shared bool) SSEEvent {
	if shared {
		ev.Raw = raw[:len(raw):len(raw)]
	} else {
		ev.Raw = append([]byte(nil), raw...)
	}
	ev.Comment = comment
	switch {
	case d.lines == 1:
		ev.Data = ev.Raw[d.off : d.off+d.n : d.off+d.n]
	case d.lines > 1:
		ev.Data = d.joined
	}
	return ev
}

// parseField applies one non-empty line to ev and returns the updated
// counts of field and comment lines; the line was appended to raw at
// offset at.
func parseField(ev *SSEEvent, d *dataSpan, raw []byte, at int, line []byte, fields, comments int) (int, int) {
	if line[0] == ':' {
		return fields, comments + 1
	}
	name, value, found := bytes.Cut(line, []byte(":"))
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) {
	case "event":
		ev.Name = eventName(value)
	case "data":
		if d.lines++; d.lines == 1 {
			d.off, d.n = at+len(line)-len(value), len(value)
		} else {
			if d.lines == 2 {
				d.joined = append([]byte(nil), raw[d.off:d.off+d.n]...)
			}
			d.joined = append(append(d.joined, '\n'), value...)
		}
	}
	return fields + 1, comments
}

// knownEvents are the event names the four APIs stream (docs/POOL.md,
// streams); eventName returns these without allocating.
var knownEvents = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop", "ping", "error", "response.created", "response.in_progress",
		"response.output_item.added", "response.output_item.done", "response.content_part.added",
		"response.content_part.done", "response.output_text.delta", "response.output_text.done",
		"response.function_call_arguments.delta", "response.function_call_arguments.done",
		"response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
		"response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
		"response.completed", "response.failed", "response.incomplete"} {
		m[n] = n
	}
	return m
}()

func eventName(v []byte) string {
	if n, ok := knownEvents[string(v)]; ok {
		return n
	}
	return string(v)
}

// maxSniffBlank bounds the blank lines skipped while sniffing (bytes).
const maxSniffBlank = 4 << 10

// SniffEventStream tells whether a body sent without the text/event-stream
// Content-Type is an event stream anyway: its first non-empty line starts
// with "event:", "data:" or ":" (WHATWG HTML §9.2.6). It only peeks, so
// every byte is still read by the SSE reader; it blocks until enough bytes
// arrive (bounded by the caller's first-output timeout). An empty body is
// not a stream (false, nil); a read error is returned.
func SniffEventStream(br *bufio.Reader) (bool, error) {
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

// IsEventStream tells an SSE answer from a JSON one.
func IsEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}
