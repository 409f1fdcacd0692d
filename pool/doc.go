// Package pool is the model pool: a local LLM endpoint that presents
// several real model channels as one virtual provider, with session-sticky
// assignment, silent failover before the first visible output, class-based
// cooldowns, merged capabilities and a status document. This package is
// the handler and the call flow; the rest is in its subpackages: config
// (configuration, classes, capabilities, keys), api (the wire APIs, one
// package each, their registry and the translation between them through a
// neutral model; apikind names them), balance (selection core and all
// state, behind balance.State; redisstate shares it), status (status
// document and page), editor (the page's configuration editor).
//
// Request flow (one call):
//
//	client ──► ServeHTTP ──► token check ──► flavour.ParseRequest
//	       (model, stream, session hints, capability demands)
//	       ──► balance.State.Begin (cooldowns, then binding, or
//	           least bound, shared by concurrent first calls) ──► order (hot
//	           first, fail-open by earliest recovery)
//	       ──► attempt per member: rewrite model + key ─► Transport
//	           non-2xx / connect error / event: error / early EOF / silence
//	           before the commit point ─► classify, cooldown, next member
//	           first visible event ─► commit: headers, held
//	           preamble, then every event flushed as it arrives
//	       ──► all failed ─► one aggregated error
//	       ──► balance.State.Finish (binding, cooldown reset, counters, record)
//
// In the code the call (call.go) orchestrates and keeps what outlives one
// member; each member's try is an attempt (attempt.go), a value that returns
// its outcome; the client's side, with its write lock, commit point,
// keep-alives and answers, is the client stream (clientstream.go).
//
// Configuration is YAML (config.ParseConfig).
package pool
