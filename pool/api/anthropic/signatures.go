package anthropic

import (
	"bytes"
	"encoding/json"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// anBlockHead is what the signature walk reads of an Anthropic content
// block: its type, and its signature or data as raw string literals
// (quotes included; nil when absent).
type anBlockHead struct {
	Type      string
	Signature []byte
	Data      []byte
}

// key is the block's signature key; "" for a block that is not reasoning
// or whose signature is empty.
func (b *anBlockHead) key() string {
	switch {
	case b.Type == "thinking" && len(b.Signature) > 2:
		return neutral.SigKeyLit(b.Signature)
	case b.Type == "redacted_thinking" && len(b.Data) > 2:
		return neutral.SigKeyLit(b.Data)
	}
	return ""
}

func (b *anBlockHead) reasoning() bool {
	return b.Type == "thinking" || b.Type == "redacted_thinking"
}

var (
	litThinking = []byte(`"thinking"`)
	litRedacted = []byte(`"redacted_thinking"`)
)

// readBlockHead reads type, signature and data of the block b, only for
// a block that may be reasoning (others cost one substring search).
func readBlockHead(b []byte) anBlockHead {
	var h anBlockHead
	if !bytes.Contains(b, litThinking) && !bytes.Contains(b, litRedacted) {
		return h
	}
	wirefmt.EachRawMember(b, func(k []byte, vs, ve int) {
		v := b[vs:ve]
		if len(v) < 2 || v[0] != '"' {
			return
		}
		switch string(k) {
		case "type":
			switch {
			case bytes.Equal(v, litThinking):
				h.Type = "thinking"
			case bytes.Equal(v, litRedacted):
				h.Type = "redacted_thinking"
			}
		case "signature":
			h.Signature = v
		case "data":
			h.Data = v
		}
	})
	return h
}

// anthropicSigned reports whether a Messages request's assistant content
// may hold reasoning blocks (CallInfo.Signed).
func anthropicSigned(role string, content []byte) bool {
	return role == "assistant" && (bytes.Contains(content, neutral.QuotedSignature) || bytes.Contains(content, neutral.QuotedRedacted))
}

// anthropicSigKeys lists the signature keys of the reasoning blocks in a
// Messages request body's assistant messages, in order, and reports
// whether one has no signature (stripThinking removes it for every
// member).
func anthropicSigKeys(body []byte) (keys []string, unsigned bool) {
	// keep is asked only about signed blocks and keeps them all: a body
	// that changes anyway had an unsigned one.
	out := stripThinking(body, func(key string) bool { keys = append(keys, key); return true })
	return keys, len(body) > 0 && (len(out) != len(body) || &out[0] != &body[0])
}

// stripThinking returns a Messages request body without the reasoning
// blocks a member cannot verify: thinking blocks with an empty signature,
// and those whose signature key keep refuses (keep is not asked about
// empty ones). A message left with no content is removed (consecutive
// user turns are merged by the API). When the request continues a tool
// loop (its last message holds tool results) and a block was removed from
// the loop's last assistant message, "thinking" becomes {"type":
// "disabled"}: with thinking on, that message must start with its thinking
// block, and Anthropic documents a tool loop's call without thinking as
// valid. The body itself is returned when nothing changes; a body that
// does not parse is returned as is (the member answers it).
func stripThinking(body []byte, keep func(key string) bool) []byte {
	var msgs [][2]int // message offsets
	msgStart, msgEnd := -1, -1
	jsonscan.EachMember(body, func(k string, vs, ve int) bool {
		if k == "messages" {
			msgStart, msgEnd = vs, ve
			return false
		}
		return true
	})
	if msgStart < 0 || !jsonscan.EachElement(body[msgStart:msgEnd], func(vs, ve int) bool {
		msgs = append(msgs, [2]int{msgStart + vs, msgStart + ve})
		return true
	}) {
		return body
	}
	var out []byte // nil until a message changes
	wrote, lastAssistantStripped := false, false
	for i, m := range msgs {
		msg, removedAny, empty := stripMessage(body[m[0]:m[1]], keep)
		if removedAny && out == nil {
			out = make([]byte, 0, len(body))
			out = append(out, body[:msgStart]...)
			out = append(out, '[')
			for _, p := range msgs[:i] {
				if wrote {
					out = append(out, ',')
				}
				out, wrote = append(out, body[p[0]:p[1]]...), true
			}
		}
		if removedAny && i == len(msgs)-2 && endsInToolResults(body, msgs) {
			lastAssistantStripped = true
		}
		if out == nil || empty {
			continue
		}
		if wrote {
			out = append(out, ',')
		}
		out, wrote = append(out, msg...), true
	}
	if out == nil {
		return body
	}
	out = append(out, ']')
	out = append(out, body[msgEnd:]...)
	if lastAssistantStripped {
		if o, ok := wirefmt.SpliceTopLevel(out, "thinking", []byte(`{"type":"disabled"}`)); ok {
			out = o
		}
	}
	return out
}

// stripMessage removes the unverifiable reasoning blocks of one assistant
// message: the message's bytes (msg itself when nothing is removed),
// whether a block was removed, and whether no content is left. A message
// without a signature or redacted block is not walked.
func stripMessage(msg []byte, keep func(string) bool) (out []byte, removed, empty bool) {
	if !bytes.Contains(msg, neutral.QuotedSignature) && !bytes.Contains(msg, neutral.QuotedRedacted) {
		return msg, false, false
	}
	assistant, cs, ce := false, -1, -1
	wirefmt.EachRawMember(msg, func(k []byte, vs, ve int) {
		switch string(k) {
		case "role":
			assistant = string(msg[vs:ve]) == `"assistant"`
		case "content":
			cs, ce = vs, ve
		}
	})
	if !assistant || cs < 0 || msg[cs] != '[' {
		return msg, false, false
	}
	var drop [][2]int // the removed blocks' offsets in msg
	total := 0
	jsonscan.EachElement(msg[cs:ce], func(vs, ve int) bool {
		total++
		h := readBlockHead(msg[cs+vs : cs+ve])
		if h.reasoning() {
			if key := h.key(); key == "" || !keep(key) {
				drop = append(drop, [2]int{cs + vs, cs + ve})
			}
		}
		return true
	})
	if len(drop) == 0 {
		return msg, false, false
	}
	if len(drop) == total {
		return nil, true, true
	}
	content := make([]byte, 0, ce-cs)
	content = append(content, '[')
	kept := 0
	jsonscan.EachElement(msg[cs:ce], func(vs, ve int) bool {
		if len(drop) > 0 && drop[0][0] == cs+vs {
			drop = drop[1:]
			return true
		}
		if kept > 0 {
			content = append(content, ',')
		}
		content, kept = append(content, msg[cs+vs:cs+ve]...), kept+1
		return true
	})
	content = append(content, ']')
	out = make([]byte, 0, len(msg))
	out = append(append(append(out, msg[:cs]...), content...), msg[ce:]...)
	return out, true, false
}

// endsInToolResults reports whether the last message is a user message
// whose content starts with a tool_result block (a tool loop in progress).
func endsInToolResults(body []byte, msgs [][2]int) bool {
	if len(msgs) < 2 {
		return false
	}
	last := body[msgs[len(msgs)-1][0]:msgs[len(msgs)-1][1]]
	var m struct {
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
		} `json:"content"`
	}
	if json.Unmarshal(last, &m) != nil || m.Role != "user" || len(m.Content) == 0 {
		return false
	}
	return m.Content[0].Type == "tool_result"
}

// anthropicAnswerSigKeys lists the signature keys of a complete Messages
// answer's reasoning blocks.
func anthropicAnswerSigKeys(body []byte) []string {
	if !bytes.Contains(body, neutral.QuotedSignature) && !bytes.Contains(body, neutral.QuotedRedacted) {
		return nil
	}
	var keys []string
	jsonscan.EachMember(body, func(k string, vs, ve int) bool {
		if k != "content" {
			return true
		}
		jsonscan.EachElement(body[vs:ve], func(bs, be int) bool {
			h := readBlockHead(body[vs+bs : vs+be])
			if key := h.key(); key != "" {
				keys = append(keys, key)
			}
			return true
		})
		return false
	})
	return keys
}

// StateKeys implements StateReader: the signature keys of a Messages
// answer's reasoning blocks (SPEC POOL-18).
func (Flavour) StateKeys(body []byte) []string { return anthropicAnswerSigKeys(body) }

// sigCollector gathers the signatures of a Messages stream: signature
// deltas joined per block, redacted_thinking data from block starts.
type sigCollector struct {
	keys []string
	open map[int][]byte // block index → signature so far
}

// observe reads one Messages stream event for signatures; cheap for the
// events that carry none.
func (s *sigCollector) observe(name string, data []byte) {
	switch name {
	case "content_block_delta":
		if !bytes.Contains(data, neutral.QuotedSigDelta) {
			return
		}
		var v struct {
			Index int `json:"index"`
			Delta struct {
				Signature string `json:"signature"`
			} `json:"delta"`
		}
		if json.Unmarshal(data, &v) == nil && v.Delta.Signature != "" {
			if s.open == nil {
				s.open = map[int][]byte{}
			}
			s.open[v.Index] = append(s.open[v.Index], v.Delta.Signature...)
		}
	case "content_block_start":
		if !bytes.Contains(data, neutral.QuotedRedacted) && !bytes.Contains(data, neutral.QuotedSignature) {
			return
		}
		wirefmt.EachRawMember(data, func(k []byte, vs, ve int) {
			if string(k) != "content_block" {
				return
			}
			h := readBlockHead(data[vs:ve])
			if key := h.key(); key != "" {
				s.keys = append(s.keys, key)
			}
		})
	case "content_block_stop":
		if len(s.open) == 0 {
			return
		}
		var v struct {
			Index int `json:"index"`
		}
		if json.Unmarshal(data, &v) == nil {
			if sig, ok := s.open[v.Index]; ok {
				s.keys = append(s.keys, neutral.SigKey(string(sig)))
				delete(s.open, v.Index)
			}
		}
	}
}

// StateKeys implements StateWatcher: the signature keys of the reasoning
// blocks the stream completed, recorded with their minter so no other
// member is sent them.
func (w *anthropicWatcher) StateKeys() []string { return w.sigs.keys }

// SignatureKeys are the keys of the thinking signatures in a request's
// history and whether it holds thinking without one (anthropicSigKeys).
func (Flavour) SignatureKeys(body []byte) ([]string, bool) { return anthropicSigKeys(body) }

// StripSignatures removes the thinking blocks whose signature keep refuses
// (stripThinking).
func (Flavour) StripSignatures(body []byte, keep func(key string) bool) []byte {
	return stripThinking(body, keep)
}
