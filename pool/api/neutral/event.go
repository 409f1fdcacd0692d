package neutral

// EventKind is the kind of a stream Event.
type EventKind uint8

// Stream event kinds.
const (
	EvStart     EventKind = iota + 1 // ID, Model, Usage (what is known at the start)
	EvPartStart                      // Index, Part: Kind; CallID and Name of a tool call; ItemID of reasoning
	EvDelta                          // Index, Part: Text (text, reasoning), Args (a tool call's JSON fragment), Signature, Encrypted, Redacted
	EvPartStop                       // Index
	EvFinish                         // Stop, StopSequence, Usage: the answer is complete
	EvPing                           // a keepalive
	EvError                          // Err: the upstream failed inside the stream
)

// Event is one step of a streamed answer in neutral form. A decoder emits,
// and an encoder relies on, this grammar:
//
//	EvStart (EvPartStart EvDelta* EvPartStop)* EvFinish
//
// with EvPing anywhere and EvError ending the stream at any point. Parts are
// sequential: Index counts 0, 1, 2… and a part is stopped before the next
// starts (the Anthropic model, which every other API can be written as).
type Event struct {
	Kind  EventKind
	Index int
	Part  Part
	// ID and Model of EvStart (either may be "").
	ID, Model string
	// Stop and StopSequence of EvFinish.
	Stop         StopReason
	StopSequence string
	// Accounting of EvStart (partial) and EvFinish (final, cumulative).
	Usage Usage
	// Err of EvError.
	Err *Error
}

// StreamDecoder reads one upstream API's stream, one SSE event at a time.
// Decode gets the event's "event" field (name, may be "") and its joined
// "data" lines, and returns the neutral events it completes (often none).
// End is called at the end of the upstream body and returns the closing
// events of APIs whose end is the EOF (Gemini), or an error when the stream
// stopped before its end. Errors name the stream field at fault. The
// returned slice may be the decoder's own and is valid until the next
// Decode: use its events, or copy them (so the usual text delta costs no
// allocation).
type StreamDecoder interface {
	Decode(name string, data []byte) ([]Event, error)
	End() ([]Event, error)
}

// StreamEncoder writes one client API's stream. Encode returns the SSE bytes
// (zero or more complete events, each ending in a blank line) for ev.
type StreamEncoder interface {
	Encode(ev Event) ([]byte, error)
}

// StartModel is the model a translated stream names (NewStreamEncoder):
// the member's, from its start event, else fallback.
func StartModel(ev Event, fallback string) string {
	if ev.Model != "" {
		return ev.Model
	}
	return fallback
}
