package api

import (
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// Stream converts one upstream stream of API from into a client stream of
// API to, one event at a time: Feed takes each upstream SSE event and
// returns the client bytes to write now; End closes the conversion at the
// upstream's EOF.
type Stream struct {
	dec     neutral.StreamDecoder
	enc     neutral.StreamEncoder
	app     deltaAppender // enc's text-delta form, nil when it has none
	started bool          // EvStart was encoded
	ended   bool          // EvFinish or EvError was encoded
	buf     []byte        // the last result, reused (Feed)
}

// maxKeptBuf is the largest output buffer a Stream keeps between events.
const maxKeptBuf = 64 << 10

// deltaAppender is an encoder that appends the usual delta events to a
// buffer instead of returning new bytes: the per-event path of a
// translated stream allocates nothing for its output. ok false
// leaves dst as it was, and the event to Encode.
type deltaAppender interface {
	AppendDelta(dst []byte, ev neutral.Event) (b []byte, ok bool)
}

// NewStream returns a converter from member API from to client API to,
// naming model in the client's events; custom as for EncodeResponse.
func NewStream(from, to apikind.Kind, model string, custom ...string) *Stream {
	s := &Stream{dec: NewStreamDecoder(from), enc: NewStreamEncoder(to, model, custom...)}
	s.app, _ = s.enc.(deltaAppender)
	return s
}

// Feed converts one upstream event (its "event" field and joined data).
// An error is a malformed or untranslatable upstream event. The bytes
// returned by Feed, End and Error are valid until the next of these calls
// (the Stream reuses its buffer): write them, or copy them.
func (s *Stream) Feed(name string, data []byte) ([]byte, error) {
	evs, err := s.dec.Decode(name, data)
	if err != nil {
		return nil, err
	}
	return s.encode(evs)
}

// End finishes the conversion at the upstream's EOF; an error means the
// upstream stopped before its answer was complete.
func (s *Stream) End() ([]byte, error) {
	evs, err := s.dec.End()
	if err != nil {
		return nil, err
	}
	return s.encode(evs)
}

// encode writes evs, holding the client stream to the Event grammar even
// when an upstream breaks it: an EvStart is supplied before the first part
// (upstreams that skip message_start/response.created), and nothing follows
// the end.
func (s *Stream) encode(evs []neutral.Event) ([]byte, error) {
	out := s.buf[:0]
	for _, ev := range evs {
		if s.ended {
			break
		}
		switch ev.Kind {
		case neutral.EvStart:
			if s.started {
				continue
			}
			s.started = true
		case neutral.EvPartStart, neutral.EvDelta, neutral.EvPartStop, neutral.EvFinish:
			if !s.started {
				s.started = true
				b, _ := s.enc.Encode(neutral.Event{Kind: neutral.EvStart})
				out = append(out, b...)
			}
		}
		if ev.Kind == neutral.EvFinish || ev.Kind == neutral.EvError {
			s.ended = true
		}
		if s.app != nil && ev.Kind == neutral.EvDelta {
			var ok bool
			if out, ok = s.app.AppendDelta(out, ev); ok {
				continue
			}
		}
		b, err := s.enc.Encode(ev)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	s.buf = out
	if cap(out) > maxKeptBuf {
		s.buf = nil // one large event does not stay with the stream
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// Error renders an in-stream failure of the pool's own (the upstream died
// after the commit point) as the client API's error event, numbered after
// what the stream already sent (Responses sequence numbers). Nothing is
// written after the stream's end.
func (s *Stream) Error(e neutral.Error) []byte {
	b, _ := s.encode([]neutral.Event{{Kind: neutral.EvError, Err: &e}})
	return b
}
