package gemini

import (
	"encoding/json"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
)

func (Flavour) NewWatcher() neutral.StreamWatcher { return &geminiWatcher{} }

// geminiWatcher follows a streamGenerateContent stream: each event is a
// whole GenerateContentResponse; the chunk with a finishReason is the last
// (the stream then ends at EOF).
type geminiWatcher struct {
	u    neutral.Accounting
	done bool
	sigs []string // thought signature keys (signatures.go)
}

func (w *geminiWatcher) Observe(ev *wirefmt.SSEEvent, committed bool) neutral.Observation {
	if ev.Comment {
		return neutral.Observation{Verdict: neutral.VPreamble}
	}
	var a geminiAnswer
	if json.Unmarshal(ev.Data, &a) != nil {
		if code, status, msg := parseGeminiError(ev.Data); status != "" || msg != "" {
			return geminiErrObs(code, status, msg)
		}
		return neutral.Observation{Verdict: neutral.VPreamble}
	}
	if wirefmt.NonEmptyJSON(a.Error) {
		return geminiErrObs(parseGeminiError(ev.Data))
	}
	if u, ok := a.usage(); ok {
		w.u = u
	}
	w.sigs = append(w.sigs, geminiSigKeys(ev.Data)...)
	visible, fin := a.visible(), a.finished()
	if fin {
		w.done = true
	}
	switch {
	case visible && !committed:
		return neutral.Observation{Verdict: neutral.VVisible} // the stream's end follows at EOF (EndedCleanly)
	case fin:
		return neutral.Observation{Verdict: neutral.VEnd}
	case visible:
		return neutral.Observation{Verdict: neutral.VVisible}
	}
	return neutral.Observation{Verdict: neutral.VPreamble}
}

func geminiErrObs(code int, status, msg string) neutral.Observation {
	st := code
	if st < 400 || st > 599 {
		st = map[string]int{"INVALID_ARGUMENT": 400, "UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403, "NOT_FOUND": 404,
			"RESOURCE_EXHAUSTED": 429, "UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504}[status]
		if st == 0 {
			st = 500
		}
	}
	return neutral.Observation{Verdict: neutral.VError, ErrStatus: st, ErrType: status, ErrMsg: msg}
}

func (w *geminiWatcher) Usage() neutral.Accounting { return w.u }

// EndedCleanly: an EOF after the finishReason chunk is Gemini's normal end.
func (w *geminiWatcher) EndedCleanly() bool { return w.done }
