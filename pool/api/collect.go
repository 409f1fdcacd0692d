package api

import (
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// Collector builds a non-streamed answer from a member's stream (SPEC
// POOL-7b): a non-streamed call that asks its member for a stream keeps
// the member's connection busy with events, and the client still gets one
// JSON answer. Feed takes each upstream SSE event in order; Response is the
// answer once the stream finished. The answer's usage is the stream's final
// usage (EvFinish), the ID and model those of its start.
type Collector struct {
	dec      neutral.StreamDecoder
	r        neutral.Response
	finished bool
	err      *neutral.Error
}

// NewCollector returns a Collector for streams of api.
func NewCollector(api apikind.Kind) *Collector {
	return &Collector{dec: NewStreamDecoder(api)}
}

// Feed reads one upstream event (its "event" field and joined data). It
// returns the member's in-stream error event (EvError) once one came, and
// an error for a malformed or untranslatable event.
func (c *Collector) Feed(name string, data []byte) (*neutral.Error, error) {
	if c.finished || c.err != nil {
		return c.err, nil
	}
	evs, err := c.dec.Decode(name, data)
	if err != nil {
		return nil, err
	}
	c.apply(evs)
	return c.err, nil
}

// End closes the stream at the upstream's EOF; like Feed it returns an
// in-stream error, and an error when the stream stopped before its end.
func (c *Collector) End() (*neutral.Error, error) {
	if c.finished || c.err != nil {
		return c.err, nil
	}
	evs, err := c.dec.End()
	if err != nil {
		return nil, err
	}
	c.apply(evs)
	if !c.finished && c.err == nil {
		return nil, neutral.FieldErr("stream", "ended before the answer finished")
	}
	return c.err, nil
}

// Finished says the stream reached its end event.
func (c *Collector) Finished() bool { return c.finished }

// Response is the answer built so far; complete once Finished. A tool call
// whose stream carried no arguments has "{}" (Part.Args).
func (c *Collector) Response() *neutral.Response {
	for i := range c.r.Parts {
		if p := &c.r.Parts[i]; p.Kind == neutral.KindToolCall && p.Args == "" {
			p.Args = "{}"
		}
	}
	return &c.r
}

// apply adds the neutral events to the answer.
func (c *Collector) apply(evs []neutral.Event) {
	for _, ev := range evs {
		if c.finished || c.err != nil {
			return
		}
		switch ev.Kind {
		case neutral.EvStart:
			if ev.ID != "" {
				c.r.ID = ev.ID
			}
			if ev.Model != "" {
				c.r.Model = ev.Model
			}
			c.r.Usage = ev.Usage
		case neutral.EvPartStart:
			for len(c.r.Parts) <= ev.Index {
				c.r.Parts = append(c.r.Parts, neutral.Part{})
			}
			c.r.Parts[ev.Index] = ev.Part
		case neutral.EvDelta:
			c.Delta(ev)
		case neutral.EvFinish:
			c.r.Stop, c.r.StopSequence, c.r.Usage = ev.Stop, ev.StopSequence, ev.Usage
			c.finished = true
		case neutral.EvError:
			e := neutral.Error{Status: 500, Type: "api_error"}
			if ev.Err != nil {
				e = *ev.Err
			}
			c.err = &e
		}
	}
}

// Delta appends a part's fragment: text, tool-call arguments, signature,
// encrypted content.
func (c *Collector) Delta(ev neutral.Event) {
	for len(c.r.Parts) <= ev.Index {
		c.r.Parts = append(c.r.Parts, neutral.Part{Kind: ev.Part.Kind})
	}
	p := &c.r.Parts[ev.Index]
	p.Text += ev.Part.Text
	p.Args += ev.Part.Args
	p.Signature += ev.Part.Signature
	p.Encrypted += ev.Part.Encrypted
	p.Redacted += ev.Part.Redacted
	if ev.Part.ItemID != "" {
		p.ItemID = ev.Part.ItemID
	}
}
