// Package api is the registry of the wire APIs a pool serves: Anthropic Messages,
// OpenAI Chat Completions, OpenAI Responses and Gemini generateContent, each in its
// own package below this one. It finds an API by its kind or by a channel's api
// word, renders the pool's error answers in the client's API, and converts a call
// between two APIs through the neutral model (package neutral): requests, answers,
// streams one event at a time, and error documents. It is the only place that
// chooses among the APIs.
//
//	client body ──DecodeRequest──▶ Request ──EncodeRequest──▶ member body
//	member body ─DecodeResponse─▶ Response ─EncodeResponse─▶ client body
//	member SSE ──StreamDecoder.Decode──▶ []Event ──StreamEncoder.Encode──▶ client SSE
//	member error ──DecodeError──▶ Error ──EncodeError──▶ client error (status, body)
package api
