// Package chat is the OpenAI Chat Completions API (POST
// /v1/chat/completions) as the pool speaks it: reading and rewriting a
// request, judging an answer, finding a stream's commit point, its error
// documents, and its codec to and from the neutral model. The OpenAI shapes
// the Responses API shares (error documents, tool choice, effort words) live
// here too.
package chat
