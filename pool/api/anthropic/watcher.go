package anthropic

import (
	"bytes"
	"encoding/json"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

func (Flavour) NewWatcher() neutral.StreamWatcher { return &anthropicWatcher{} }

// anthropicWatcher finds the commit point of a Messages stream (docs/POOL.md,
// the commit point): a delta with non-empty text, thinking,
// partial JSON or citation, or a content_block_start of anything but an
// empty text/thinking block (tool_use, server_tool_use, redacted_thinking…).
// message_start, ping, empty block starts, signature deltas and block stops
// are preamble.
type anthropicWatcher struct {
	u    neutral.Accounting
	sigs sigCollector // reasoning signatures (signatures.go)
}

func (w *anthropicWatcher) Usage() neutral.Accounting { return w.u }

func (w *anthropicWatcher) Observe(ev *wirefmt.SSEEvent, committed bool) neutral.Observation {
	if ev.Comment {
		return neutral.Observation{Verdict: neutral.VPreamble}
	}
	name := ev.Name
	if name == "" {
		var t struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(ev.Data, &t)
		name = t.Type
	}
	w.sigs.observe(name, ev.Data)
	switch name {
	case "message_start":
		var v startUsage
		if wirefmt.DecodeRequest(ev.Data, &v) == nil { // one scan, not json.Unmarshal
			v.Message.Usage.mergeInto(&w.u)
		}
	case "message_delta":
		var v deltaUsage
		if wirefmt.DecodeRequest(ev.Data, &v) == nil {
			v.Usage.mergeInto(&w.u)
		}
	case "message_stop":
		return neutral.Observation{Verdict: neutral.VEnd}
	case "error":
		typ, msg := Flavour{}.ParseError(ev.Data)
		return neutral.Observation{Verdict: neutral.VError, ErrStatus: anthropicStatus(typ), ErrType: typ, ErrMsg: msg}
	case "content_block_start":
		if !committed && blockStartVisible(ev.Data) {
			return neutral.Observation{Verdict: neutral.VVisible}
		}
	case "content_block_delta":
		if !committed && deltaVisible(ev.Data) {
			return neutral.Observation{Verdict: neutral.VVisible}
		}
	}
	return neutral.Observation{Verdict: neutral.VPreamble}
}

func blockStartVisible(data []byte) bool {
	var v struct {
		Block struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Thinking string `json:"thinking"`
		} `json:"content_block"`
	}
	if json.Unmarshal(data, &v) != nil {
		return false
	}
	switch v.Block.Type {
	case "text":
		return v.Block.Text != ""
	case "thinking":
		return v.Block.Thinking != ""
	case "":
		return false
	}
	return true
}

func deltaVisible(data []byte) bool {
	var v struct {
		Delta struct {
			Type        string          `json:"type"`
			Text        string          `json:"text"`
			Thinking    string          `json:"thinking"`
			PartialJSON string          `json:"partial_json"`
			Citation    json.RawMessage `json:"citation"`
		} `json:"delta"`
	}
	if json.Unmarshal(data, &v) != nil {
		return false
	}
	d := v.Delta
	return d.Text != "" || d.Thinking != "" || d.PartialJSON != "" ||
		(d.Type == "citations_delta" && len(bytes.TrimSpace(d.Citation)) > 0)
}
