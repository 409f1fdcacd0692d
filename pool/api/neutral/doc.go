// Package neutral is the form every wire API is read into and written from:
// the neutral model of a call (Request, Response, the stream's Event grammar,
// Error, FieldError) that the codecs convert through, so four APIs need four
// decoders and four encoders instead of twelve pairwise converters; and what
// the pool reads of a call whatever its API (CallInfo, Endpoint, the stream
// watcher's Observation, Accounting, Attempt).
//
// What a target API cannot express is an error of type *FieldError naming
// the field (the pool answers it with a 400), never a silent drop that
// changes the meaning. Things a target has no slot for but whose loss does
// not change the answer — reasoning text into an API without reasoning
// input, cache_control breakpoints into an API without them, Gemini thought
// signatures into other APIs — are dropped on purpose; each encoder's doc
// comment lists them.
package neutral
