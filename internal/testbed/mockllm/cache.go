package mockllm

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

// PromptCache is the member-side prompt cache of an Anthropic Messages
// channel, modelled on what Anthropic documents ("Prompt caching"), so a test
// can show which turns of a session read the cache:
//
//   - a call's prompt is its blocks in prefix order: tools, system blocks,
//     then each message's content blocks (a string is one text block);
//   - a block with cache_control is a breakpoint: the prefix up to and
//     including it is written to the cache (when it has at least MinTokens);
//   - a later call reads the longest cached prefix that ends at one of its
//     blocks at most 20 blocks before (or at) one of its breakpoints; a call
//     without breakpoints reads nothing;
//   - usage: cache_read_input_tokens is the prefix read,
//     cache_creation_input_tokens what was written beyond it up to the last
//     breakpoint, input_tokens the rest;
//   - more than 4 breakpoints, or one on a thinking, redacted_thinking or
//     empty text block, is refused 400 invalid_request_error.
//
// A block costs one token per 4 bytes of its JSON without cache_control (at
// least one); the model id, a message's role and a block's place in tools,
// system or messages are part of the prefix. Nothing expires. Safe for
// concurrent use.
type PromptCache struct {
	// MinTokens is the shortest prefix written (Anthropic: 1024 tokens for
	// most models); 0 writes any.
	MinTokens int

	mu       sync.Mutex
	prefixes map[[32]byte]bool
}

// cacheBlock is one block of a prompt.
type cacheBlock struct {
	canon  []byte // what identifies it in the prefix
	tokens int
	mark   bool   // carries cache_control
	bad    string // why it may not carry cache_control ("" when it may)
}

// cacheUsage is what a call reports.
type cacheUsage struct{ input, read, write int }

// lookback is how far before a breakpoint Anthropic looks for a cached
// prefix (blocks).
const lookback = 20

// use runs a Messages call body through the cache: its usage, or the 400
// message when the request's breakpoints are refused.
func (pc *PromptCache) use(body map[string]any) (cacheUsage, string) {
	blocks := promptBlocks(body)
	var marks []int
	for i, b := range blocks {
		if !b.mark {
			continue
		}
		if b.bad != "" {
			return cacheUsage{}, b.bad
		}
		marks = append(marks, i)
	}
	if len(marks) > 4 {
		return cacheUsage{}, fmt.Sprintf("A maximum of 4 blocks with cache_control may be provided. Found %d.", len(marks))
	}
	hashes := make([][32]byte, len(blocks))
	cum := make([]int, len(blocks))
	h := sha256.Sum256([]byte(fmt.Sprint(body["model"])))
	total := 0
	for i, b := range blocks {
		h = sha256.Sum256(append(h[:], b.canon...))
		hashes[i] = h
		total += b.tokens
		cum[i] = total
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.prefixes == nil {
		pc.prefixes = map[[32]byte]bool{}
	}
	hit := -1
	for _, m := range marks {
		for j := m; j >= 0 && j > m-lookback && j > hit; j-- {
			if pc.prefixes[hashes[j]] {
				hit = j
				break
			}
		}
	}
	u := cacheUsage{input: total}
	cached := 0
	if hit >= 0 {
		u.read, cached = cum[hit], cum[hit]
	}
	for _, m := range marks {
		if cum[m] >= pc.MinTokens {
			pc.prefixes[hashes[m]] = true
			if cum[m] > cached {
				u.write, cached = u.write+cum[m]-cached, cum[m]
			}
		}
	}
	u.input = total - cached
	return u, ""
}

// promptBlocks are the blocks of a Messages body in prefix order.
func promptBlocks(body map[string]any) []cacheBlock {
	var out []cacheBlock
	add := func(where string, v any) {
		m, _ := v.(map[string]any)
		b := cacheBlock{}
		if m == nil {
			m = map[string]any{"type": "text", "text": v}
		}
		if _, b.mark = m["cache_control"]; b.mark {
			m = cloneWithout(m, "cache_control")
			switch typ, _ := m["type"].(string); {
			case typ == "thinking" || typ == "redacted_thinking":
				b.bad = where + ".cache_control: cache_control cannot be set for " + typ + " blocks"
			case typ == "text" && m["text"] == "":
				b.bad = where + ".cache_control: cache_control cannot be set for empty text blocks"
			}
		}
		j, _ := json.Marshal(m)
		b.canon = append([]byte(where+"\x00"), j...)
		b.tokens = max(1, len(j)/4)
		out = append(out, b)
	}
	tools, _ := body["tools"].([]any)
	for _, t := range tools {
		add("tools", t)
	}
	switch s := body["system"].(type) {
	case string:
		add("system", s)
	case []any:
		for _, b := range s {
			add("system", b)
		}
	}
	msgs, _ := body["messages"].([]any)
	for i, mv := range msgs {
		m, _ := mv.(map[string]any)
		where := fmt.Sprintf("messages.%d.%v", i, m["role"])
		switch c := m["content"].(type) {
		case string:
			add(where, c)
		case []any:
			for j, b := range c {
				add(fmt.Sprintf("%s.content.%d", where, j), b)
			}
		}
	}
	return out
}

func cloneWithout(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// refusal is a 400 answer a model call gets instead of its turn.
type refusal struct {
	status int
	doc    any
}

// screen applies the channel's declared output limits (limits.go) and, on an
// Anthropic Messages call, its prompt cache to a model call of api: the
// refusal the call gets, or nil with turn's usage set from the cache.
func (c *Channel) screen(api, path string, body map[string]any, turn *Turn) *refusal {
	if r := c.limitRefusal(api, path, body); r != nil {
		return r
	}
	if c.Cache == nil || api != Anthropic {
		return nil
	}
	u, bad := c.Cache.use(body)
	if bad != "" {
		return &refusal{http.StatusBadRequest, errorDoc(Anthropic, http.StatusBadRequest, bad)}
	}
	turn.InputTokens, turn.CachedTokens, turn.CacheWriteTokens = u.input, u.read, u.write
	return nil
}
