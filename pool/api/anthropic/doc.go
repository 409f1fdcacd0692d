// Package anthropic is the Anthropic Messages API (POST /v1/messages) as the
// pool speaks it: reading and rewriting a request (model, effort, session
// hints, capability demands), judging an answer, finding a stream's commit
// point, its error documents and events, its codec to and from the neutral
// Model, and the rules that let a session survive a change of member:
// reasoning signatures, tool-use ids and cache_control breakpoints.
package anthropic
