package anthropic

import (
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

// Prompt-cache breakpoints for an Anthropic member.
//
// Anthropic caches nothing unless a request marks where a cacheable prefix
// ends (cache_control on a tool, a system block or a message block; the
// prefix runs tools → system → messages). A Chat, Responses or Gemini client
// sends no such marks, so without the pool's own every turn of a translated
// session would pay its whole context as fresh input. What Anthropic
// documents ("Prompt caching"), and what the placement follows:
//
//   - at most 4 breakpoints per request (more is a 400);
//   - a breakpoint caches the prefix up to and including its block; a later
//     request reads the longest cached prefix it shares, looked up at block
//     boundaries up to 20 blocks before each of its breakpoints;
//   - for a growing conversation, mark the last block of the final message
//     each turn, so the conversation is cached incrementally;
//   - thinking and redacted_thinking blocks and empty text blocks cannot
//     carry cache_control;
//   - a prefix shorter than the model's minimum (1024 tokens for most
//     models, 2048 or 4096 for some) is not cached, without an error;
//   - a breakpoint with a 1 h TTL must not come after one with 5 min.
//
// So the pool keeps the client's breakpoints (the latest four when it sent
// more) and, while slots remain, adds in this order: the final message's
// last block (this turn writes it), the last block of the user message the
// previous turn ended with (this turn reads it, however many blocks the turn
// added), the end of the system prompt and the last tool (a new session with
// the same prompt and tools reads those). An added breakpoint takes the
// longest TTL of the client's breakpoints after it, so TTLs never decrease
// along the prefix.

// maxBreakpoints is Anthropic's limit of cache_control marks per request.
const maxBreakpoints = 4

// placeBreakpoints sets w's cache_control marks: the client's kept (the
// latest maxBreakpoints), the pool's added when r.CacheBreakpoints (see
// above); then it writes w.System: a string as before when no breakpoint
// falls in it, else text blocks that end at each breakpoint and together
// hold the same text. Long system text goes to h.
func placeBreakpoints(r *neutral.Request, w *anRequestOut, h *wirefmt.HeldStrings) {
	sys := make([]*neutral.AnCache, len(r.System))
	for i := range sys {
		sys[i] = neutral.AnCacheOf(r.SystemMark(i))
	}
	sites := breakpointSites(w, sys)
	n := 0
	for i := len(sites) - 1; i >= 0; i-- {
		if *sites[i] == nil {
			continue
		}
		if n++; n > maxBreakpoints {
			*sites[i] = nil // the client sent more than Anthropic takes: the earliest go
		}
	}
	if r.CacheBreakpoints {
		for _, s := range autoSites(w, sys) {
			if n >= maxBreakpoints {
				break
			}
			if s != nil && *s == nil {
				*s = &neutral.AnCache{Type: "ephemeral"}
				n++
			}
		}
		orderTTLs(sites)
	}
	w.System = systemOut(r.System, sys, h)
}

// breakpointSites are the places of w that may carry a breakpoint, in
// prefix order (tools, system blocks, message blocks); sys holds the system
// blocks' marks.
func breakpointSites(w *anRequestOut, sys []*neutral.AnCache) []**neutral.AnCache {
	var out []**neutral.AnCache
	for i := range w.Tools {
		out = append(out, &w.Tools[i].CacheControl)
	}
	for i := range sys {
		out = append(out, &sys[i])
	}
	for i := range w.Messages {
		for j := range w.Messages[i].Content {
			if b := &w.Messages[i].Content[j]; markable(b) {
				out = append(out, &b.CacheControl)
			}
		}
	}
	return out
}

// markable: Anthropic takes cache_control on this block (not on thinking,
// redacted thinking or an empty text block).
func markable(b *anBlock) bool {
	switch b.Type {
	case "thinking", "redacted_thinking":
		return false
	case "text":
		return b.Text != ""
	}
	return true
}

// autoSites are the pool's breakpoints in the order they are added: the
// final message's last markable block, that of the user message before the
// last assistant message (where the previous turn ended), the system
// prompt's end, the last tool; nil where the request has none.
func autoSites(w *anRequestOut, sys []*neutral.AnCache) []**neutral.AnCache {
	out := make([]**neutral.AnCache, 0, 4)
	last := len(w.Messages) - 1
	out = append(out, lastMarkable(w, last))
	prev := -1
	for i := last - 1; i >= 0; i-- {
		if w.Messages[i].Role == string(neutral.RoleAssistant) {
			for j := i - 1; j >= 0 && prev < 0; j-- {
				if w.Messages[j].Role == string(neutral.RoleUser) {
					prev = j
				}
			}
			break
		}
	}
	out = append(out, lastMarkable(w, prev))
	if len(sys) > 0 {
		out = append(out, &sys[len(sys)-1])
	}
	if len(w.Tools) > 0 {
		out = append(out, &w.Tools[len(w.Tools)-1].CacheControl)
	}
	return out
}

// lastMarkable is the last markable block of message i, nil when there is
// none (or no message i).
func lastMarkable(w *anRequestOut, i int) **neutral.AnCache {
	if i < 0 || i >= len(w.Messages) {
		return nil
	}
	c := w.Messages[i].Content
	for j := len(c) - 1; j >= 0; j-- {
		if markable(&c[j]) {
			return &c[j].CacheControl
		}
	}
	return nil
}

// orderTTLs gives every breakpoint without a TTL the longest TTL of the
// breakpoints after it, so that a 1 h breakpoint never follows a 5 min one
// (Anthropic refuses that order). Only "1h" is longer than the default.
func orderTTLs(sites []**neutral.AnCache) {
	long := false
	for i := len(sites) - 1; i >= 0; i-- {
		c := *sites[i]
		switch {
		case c == nil:
		case c.TTL == "1h":
			long = true
		case long && c.TTL == "":
			c.TTL = "1h"
		}
	}
}

// systemOut is the Messages system value for blocks sys marked per block by
// marks: "" → none, the joined text when nothing is marked, else text
// blocks each ending at a mark (the last block also unmarked when the text
// goes on past the last mark). Blocks but the last end in the "\n\n" that
// joins system blocks, so the text is the same either way.
func systemOut(sys []string, marks []*neutral.AnCache, h *wirefmt.HeldStrings) any {
	if len(sys) == 0 {
		return nil
	}
	marked := false
	for _, m := range marks {
		marked = marked || m != nil
	}
	if !marked {
		return h.Str(strings.Join(sys, "\n\n"))
	}
	var out []anBlock
	start := 0
	for i := range sys {
		if marks[i] == nil && i < len(sys)-1 {
			continue
		}
		text := strings.Join(sys[start:i+1], "\n\n")
		if i < len(sys)-1 {
			text += "\n\n"
		}
		out = append(out, anBlock{Type: "text", Text: h.Str(text), CacheControl: marks[i]})
		start = i + 1
	}
	return out
}
