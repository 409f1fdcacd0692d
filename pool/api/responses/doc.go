// Package responses is the OpenAI Responses API (POST /v1/responses) as the
// pool speaks it: reading and rewriting a request, judging an answer,
// finding a stream's commit point, its error events, its codec to and from
// the neutral model, and the stored state a response names
// (previous_response_id, conversations, item references, encrypted
// reasoning) that binds a session to the member that holds it.
package responses
