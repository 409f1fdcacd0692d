package translate

import "github.com/dual-proxy/dual-proxy/pool/apikind"

// DecodeRequest reads a client request body of api. For apikind.Gemini, model and
// stream come from the URL; the other APIs read them from the body and
// ignore the arguments.
func DecodeRequest(api apikind.Kind, body []byte, model string, stream bool) (*Request, error) {
	return decodeRequest(api, body, model, stream, false)
}

// DecodeValidRequest is DecodeRequest of a body known to be valid JSON (the
// pool's, which ParseRequest validated and accepted): it is not
// validated again, only decoded: the body is decoded once. A body that is
// not valid JSON must not be passed: it is read without panicking, but
// need not be refused.
func DecodeValidRequest(api apikind.Kind, body []byte, model string, stream bool) (*Request, error) {
	return decodeRequest(api, body, model, stream, true)
}

func decodeRequest(api apikind.Kind, body []byte, model string, stream, valid bool) (*Request, error) {
	switch api {
	case apikind.Anthropic:
		return decodeAnthropicRequest(body, valid)
	case apikind.Chat:
		return decodeChatRequest(body, valid)
	case apikind.Responses:
		return decodeResponsesRequest(body, valid)
	case apikind.Gemini:
		return decodeGeminiRequest(body, model, stream, valid)
	}
	panic("translate: unknown API " + string(api))
}

// EncodeRequest writes r as a request body of api (for apikind.Gemini the model
// and stream belong in the URL: GeminiPath).
func EncodeRequest(api apikind.Kind, r *Request) ([]byte, error) {
	switch api {
	case apikind.Anthropic:
		return EncodeAnthropicRequest(r)
	case apikind.Chat:
		return EncodeChatRequest(r)
	case apikind.Responses:
		return EncodeResponsesRequest(r)
	case apikind.Gemini:
		return EncodeGeminiRequest(r)
	}
	panic("translate: unknown API " + string(api))
}

// DecodeResponse reads a non-streamed answer body of api.
func DecodeResponse(api apikind.Kind, body []byte) (*Response, error) {
	switch api {
	case apikind.Anthropic:
		return DecodeAnthropicResponse(body)
	case apikind.Chat:
		return DecodeChatResponse(body)
	case apikind.Responses:
		return DecodeResponsesResponse(body)
	case apikind.Gemini:
		return DecodeGeminiResponse(body)
	}
	panic("translate: unknown API " + string(api))
}

// EncodeResponse writes r as a non-streamed answer of api naming the model
// the member's answer names (r.Model), as a same-API answer passed through
// byte for byte does (SPEC POOL-21), or model (the id the member was asked
// for) when it names none; custom names the request's freeform tools
// (Request.CustomTools), whose calls a Responses client gets as
// custom_tool_call items.
func EncodeResponse(api apikind.Kind, r *Response, model string, custom ...string) ([]byte, error) {
	if r.Model != "" {
		model = r.Model
	}
	switch api {
	case apikind.Anthropic:
		return EncodeAnthropicResponse(r, model)
	case apikind.Chat:
		return EncodeChatResponse(r, model)
	case apikind.Responses:
		return EncodeResponsesResponse(r, model, custom...)
	case apikind.Gemini:
		return EncodeGeminiResponse(r, model)
	}
	panic("translate: unknown API " + string(api))
}

// Stream converts one upstream stream of API from into a client stream of
// API to, one event at a time: Feed takes each upstream SSE event and
// returns the client bytes to write now; End closes the conversion at the
// upstream's EOF.
type Stream struct {
	dec     StreamDecoder
	enc     StreamEncoder
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
	appendDelta(dst []byte, ev Event) (b []byte, ok bool)
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
func (s *Stream) encode(evs []Event) ([]byte, error) {
	out := s.buf[:0]
	for _, ev := range evs {
		if s.ended {
			break
		}
		switch ev.Kind {
		case EvStart:
			if s.started {
				continue
			}
			s.started = true
		case EvPartStart, EvDelta, EvPartStop, EvFinish:
			if !s.started {
				s.started = true
				b, _ := s.enc.Encode(Event{Kind: EvStart})
				out = append(out, b...)
			}
		}
		if ev.Kind == EvFinish || ev.Kind == EvError {
			s.ended = true
		}
		if s.app != nil && ev.Kind == EvDelta {
			var ok bool
			if out, ok = s.app.appendDelta(out, ev); ok {
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
func (s *Stream) Error(e Error) []byte {
	b, _ := s.encode([]Event{{Kind: EvError, Err: &e}})
	return b
}
