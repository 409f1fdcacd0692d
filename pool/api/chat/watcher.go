package chat

import (
	"bytes"
	"encoding/json"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

func (Flavour) NewWatcher() neutral.StreamWatcher { return &chatWatcher{} }

// chatWatcher finds the commit point of a Chat Completions stream
// (docs/POOL.md): a chunk with non-empty content, reasoning_content or any
// tool_calls. Role-only chunks, empty deltas, usage-only chunks and comments
// are preamble; "data: [DONE]" is the end; a chunk carrying "error" (or an
// "event: error") is an error.
type chatWatcher struct {
	u        neutral.Accounting
	finished bool // a finish_reason was seen
}

func (w *chatWatcher) Usage() neutral.Accounting { return w.u }

// EndedCleanly: a stream that sent its finish_reason and then closed
// without "data: [DONE]" ended normally (some compatible servers omit it).
func (w *chatWatcher) EndedCleanly() bool { return w.finished }

var doneData = []byte("[DONE]")

func (w *chatWatcher) Observe(ev *wirefmt.SSEEvent, committed bool) neutral.Observation {
	if ev.Comment {
		return neutral.Observation{Verdict: neutral.VPreamble}
	}
	data := bytes.TrimSpace(ev.Data)
	if bytes.Equal(data, doneData) {
		return neutral.Observation{Verdict: neutral.VEnd}
	}
	isErr := ev.Name == "error"
	if committed && !isErr && !bytes.Contains(data, []byte(`"usage"`)) && !bytes.Contains(data, []byte(`"error"`)) &&
		!finishSet(data) {
		return neutral.Observation{Verdict: neutral.VPreamble} // fast path: nothing to account
	}
	var v struct {
		Choices []struct {
			Delta        chatDelta `json:"delta"`
			FinishReason *string   `json:"finish_reason"`
		} `json:"choices"`
		Usage *openaiUsage    `json:"usage"`
		Error *OpenaiError    `json:"error"`
		Msg   string          `json:"message"`
		Type  string          `json:"type"`
		Code  json.RawMessage `json:"code"`
	}
	if json.Unmarshal(data, &v) != nil {
		return neutral.Observation{Verdict: neutral.VPreamble}
	}
	if isErr && v.Error == nil {
		v.Error = &OpenaiError{Message: v.Msg, Type: v.Type, Code: v.Code}
	}
	if v.Error != nil {
		typ, n := v.Error.TypeAndCode()
		return neutral.Observation{Verdict: neutral.VError, ErrStatus: OpenaiStatus(typ, n), ErrType: typ, ErrMsg: v.Error.Message}
	}
	if v.Usage != nil {
		w.u = v.Usage.toUsage()
	}
	visible := false
	for i := range v.Choices {
		if v.Choices[i].FinishReason != nil && *v.Choices[i].FinishReason != "" {
			w.finished = true
		}
		if v.Choices[i].Delta.visible() {
			visible = true
		}
	}
	if visible && !committed {
		return neutral.Observation{Verdict: neutral.VVisible}
	}
	return neutral.Observation{Verdict: neutral.VPreamble}
}

// finishSet reports a "finish_reason" key whose value is not null, without
// decoding the chunk (the fast path after the commit point).
func finishSet(data []byte) bool {
	key := []byte(`"finish_reason"`)
	for {
		i := bytes.Index(data, key)
		if i < 0 {
			return false
		}
		data = bytes.TrimLeft(data[i+len(key):], " \t\r\n:")
		if len(data) > 0 && data[0] != 'n' {
			return true
		}
	}
}
