// Package gemini is the Gemini generateContent API
// (/v1beta/models/{model}:generateContent and :streamGenerateContent) as the
// pool speaks it: reading and rewriting a request, judging an answer,
// finding a stream's commit point, its error documents, its codec to and
// from the neutral model, and the thoughtSignature rule that lets a session
// survive a change of member.
package gemini
