package api_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dual-proxy/dual-proxy/internal/testbed/fixtures"
	"github.com/dual-proxy/dual-proxy/pool/api"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/api/wirefmt"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// The tests of this file read the providers' documented answers kept in
// testdata/streams/<api>/ (testdata/streams/README.md) through the
// production entry points only: the registry (api.For), the codec functions
// and wirefmt's SSE reader. Each states a rule that holds for every
// fixture, so a new recording is tested by adding its file.

// streamAPIs are the wire APIs whose answers testdata/streams holds.
var streamAPIs = []apikind.Kind{apikind.Anthropic, apikind.Chat, apikind.Responses, apikind.Gemini}

// streamDir is the directory of api's fixtures under testdata/streams.
var streamDir = map[apikind.Kind]string{apikind.Anthropic: "anthropic", apikind.Chat: "chat",
	apikind.Responses: "responses", apikind.Gemini: "gemini"}

// streamFixture is one stream fixture: its API, its name and its SSE events as
// the pool's reader splits them.
type streamFixture struct {
	api    apikind.Kind
	name   string
	events []wirefmt.SSEEvent
}

// streamFixtures reads every .sse fixture of api.
func streamFixtures(t *testing.T, kind apikind.Kind) []streamFixture {
	t.Helper()
	var out []streamFixture
	for _, p := range fixtures.Glob(t, "streams/"+streamDir[kind]+"/*.sse") {
		b := fixtures.Read(t, "streams", streamDir[kind], filepath.Base(p))
		out = append(out, streamFixture{api: kind, name: strings.TrimSuffix(filepath.Base(p), ".sse"), events: splitSSE(t, b)})
	}
	return out
}

// splitSSE splits b with the pool's SSE reader (SPEC POOL-19).
func splitSSE(t *testing.T, b []byte) []wirefmt.SSEEvent {
	t.Helper()
	r := wirefmt.NewSSEReader(bytes.NewReader(b))
	defer r.Release()
	var evs []wirefmt.SSEEvent
	for i := 0; ; i++ {
		if i > 100000 {
			t.Fatal("SSE reader does not end")
		}
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatalf("SSE: %v", err)
		}
		evs = append(evs, ev)
	}
}

// streamAnswer is what a client makes of a stream: the neutral answer assembled
// from its events, the error that ended it, and the index of the SSE event
// where visible output first appeared (-1: none) and of the one that
// carried the error (-1: none).
type streamAnswer struct {
	resp                neutral.Response
	err                 *neutral.Error
	finished            bool
	firstVisible, errAt int
}

// assembleStream decodes events with api's stream decoder, End included.
func assembleStream(t *testing.T, kind apikind.Kind, events []wirefmt.SSEEvent) streamAnswer {
	t.Helper()
	dec := api.NewStreamDecoder(kind)
	a := streamAnswer{firstVisible: -1, errAt: -1}
	apply := func(at int, evs []neutral.Event) {
		for _, e := range evs {
			switch e.Kind {
			case neutral.EvStart:
				a.resp.ID, a.resp.Model = e.ID, e.Model
			case neutral.EvPartStart:
				a.resp.Parts = append(a.resp.Parts, e.Part)
				if e.Part.Kind == neutral.KindToolCall && a.firstVisible < 0 {
					a.firstVisible = at
				}
			case neutral.EvDelta:
				if len(a.resp.Parts) == 0 {
					t.Fatalf("event %d: a delta before any part", at)
				}
				p := &a.resp.Parts[len(a.resp.Parts)-1]
				p.Text += e.Part.Text
				p.Args += e.Part.Args
				p.Signature += e.Part.Signature
				p.Encrypted += e.Part.Encrypted
				if (e.Part.Text != "" || e.Part.Args != "") && a.firstVisible < 0 {
					a.firstVisible = at
				}
			case neutral.EvFinish:
				a.resp.Stop, a.resp.StopSequence, a.resp.Usage = e.Stop, e.StopSequence, e.Usage
				a.finished = true
			case neutral.EvError:
				a.err, a.errAt = e.Err, at
			}
		}
	}
	for i, ev := range events {
		if ev.Comment {
			continue
		}
		evs, err := dec.Decode(ev.Name, ev.Data)
		if err != nil {
			t.Fatalf("event %d (%s): %v", i, ev.Name, err)
		}
		apply(i, evs)
	}
	evs, err := dec.End()
	if err != nil && a.err == nil {
		t.Fatalf("end of stream: %v", err)
	}
	apply(len(events), evs)
	return a
}

// reencode writes a neutral event sequence as a stream of api with its
// encoder and reads it back as SSE events.
func reencode(t *testing.T, kind apikind.Kind, evs []neutral.Event) []wirefmt.SSEEvent {
	t.Helper()
	enc := api.NewStreamEncoder(kind, "fixture-model")
	var out bytes.Buffer
	for _, e := range evs {
		b, err := enc.Encode(e)
		if err != nil {
			t.Fatalf("encode %v as %s: %v", e.Kind, kind, err)
		}
		out.Write(b)
	}
	return splitSSE(t, out.Bytes())
}

// decodeNeutral decodes events into the neutral events the pool's
// translator hands an encoder (copied: a decoder may reuse its slice).
func decodeNeutral(t *testing.T, kind apikind.Kind, events []wirefmt.SSEEvent) []neutral.Event {
	t.Helper()
	dec := api.NewStreamDecoder(kind)
	var out []neutral.Event
	for i, ev := range events {
		if ev.Comment {
			continue
		}
		evs, err := dec.Decode(ev.Name, ev.Data)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		out = append(out, evs...)
	}
	evs, err := dec.End()
	if err == nil {
		out = append(out, evs...)
	}
	return out
}

// answerToolCall is a tool call as a client runs it: name and arguments (JSON
// compared by value).
type answerToolCall struct{ name, args string }

func partsText(r *neutral.Response, kind neutral.Kind) string {
	var b strings.Builder
	for _, p := range r.Parts {
		if p.Kind == kind {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func answerToolCalls(t *testing.T, r *neutral.Response) []answerToolCall {
	t.Helper()
	var out []answerToolCall
	for _, p := range r.Parts {
		if p.Kind == neutral.KindToolCall {
			out = append(out, answerToolCall{p.Name, argsJSON(t, neutral.ArgsOrEmpty(p.Args))})
		}
	}
	return out
}

func argsJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("tool call arguments are not JSON: %v: %q", err, s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// sameStreamAnswer fails unless got carries what want carries for a client: the
// text, the reasoning text, the tool calls (name, arguments), the stop
// reason and the usage as far as API to can express it.
func sameStreamAnswer(t *testing.T, what string, to apikind.Kind, want, got *neutral.Response) {
	t.Helper()
	if w, g := partsText(want, neutral.KindText), partsText(got, neutral.KindText); w != g {
		t.Errorf("%s: text %q, want %q", what, g, w)
	}
	w, g := answerToolCalls(t, want), answerToolCalls(t, got)
	if len(w) != len(g) {
		t.Errorf("%s: tool calls %v, want %v", what, g, w)
	} else {
		for i := range w {
			if w[i] != g[i] {
				t.Errorf("%s: tool call %d is %v, want %v", what, i, g[i], w[i])
			}
		}
	}
	if want.Stop != got.Stop {
		t.Errorf("%s: stop %q, want %q", what, got.Stop, want.Stop)
	}
	if w, g := partsText(want, neutral.KindReasoning), partsText(got, neutral.KindReasoning); w != g {
		t.Errorf("%s: reasoning %q, want %q", what, g, w)
	}
	u := want.Usage
	if !usageCountsReasoning[to] {
		u.Reasoning = 0
	}
	if u != got.Usage {
		t.Errorf("%s: usage %+v, want %+v", what, got.Usage, u)
	}
}

// usageCountsReasoning are the APIs whose usage counts reasoning tokens apart
// (Anthropic's output_tokens include them with no count of their own).
var usageCountsReasoning = map[apikind.Kind]bool{apikind.Chat: true, apikind.Responses: true, apikind.Gemini: true}

// TestRecordedStreamsTranslate checks every documented stream of every API
// (SPEC POOL-21): it decodes with its API's decoder into a complete answer
// or one ended by an error; written as each other API's stream by that
// API's encoder and decoded back, the client still gets the same text,
// tool calls, stop reason and usage, or the same error.
func TestRecordedStreamsTranslate(t *testing.T) {
	for _, from := range streamAPIs {
		for _, rec := range streamFixtures(t, from) {
			t.Run("POOL-21/"+streamDir[from]+"/"+rec.name, func(t *testing.T) {
				orig := assembleStream(t, from, rec.events)
				if orig.finished == (orig.err != nil) {
					t.Fatalf("the stream ends in neither a finish nor an error, or both (finished %v, error %+v)", orig.finished, orig.err)
				}
				if orig.finished && orig.firstVisible < 0 {
					t.Fatalf("a finished stream with no visible output")
				}
				evs := decodeNeutral(t, from, rec.events)
				for _, to := range streamAPIs {
					back := assembleStream(t, to, reencode(t, to, evs))
					what := streamDir[from] + " as " + streamDir[to]
					if orig.err != nil {
						if back.err == nil {
							t.Errorf("%s: the error %+v is lost", what, orig.err)
						} else if back.err.Message != orig.err.Message {
							t.Errorf("%s: error message %q, want %q", what, back.err.Message, orig.err.Message)
						}
						if w, g := partsText(&orig.resp, neutral.KindText), partsText(&back.resp, neutral.KindText); w != g {
							t.Errorf("%s: text before the error %q, want %q", what, g, w)
						}
						continue
					}
					if !back.finished {
						t.Errorf("%s: the answer does not finish", what)
					}
					sameStreamAnswer(t, what, to, &orig.resp, &back.resp)
				}
			})
		}
	}
}

// TestRecordedAnswersAgree checks every documented non-streamed answer
// (SPEC POOL-21): it decodes with its API's decoder; an answer recorded
// beside a stream of the same name carries what that stream carries (the
// same answer, streamed or not); written as each other API's answer and
// decoded back, it keeps its text, tool calls, stop reason and usage.
func TestRecordedAnswersAgree(t *testing.T) {
	for _, from := range streamAPIs {
		for _, p := range fixtures.Glob(t, "streams/"+streamDir[from]+"/*.json") {
			name := strings.TrimSuffix(filepath.Base(p), ".json")
			t.Run("POOL-21/"+streamDir[from]+"/"+name, func(t *testing.T) {
				body := fixtures.Read(t, "streams", streamDir[from], name+".json")
				resp, err := api.DecodeResponse(from, body)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if len(resp.Parts) == 0 || resp.Stop == "" {
					t.Fatalf("decoded answer has no parts or no stop reason: %+v", resp)
				}
				if _, err := os.Stat(fixtures.Path(t, "streams", streamDir[from], name+".sse")); err == nil {
					streamed := assembleStream(t, from, splitSSE(t, fixtures.Read(t, "streams", streamDir[from], name+".sse")))
					sameStreamAnswer(t, "streamed and not", from, resp, &streamed.resp)
				}
				for _, to := range streamAPIs {
					b, err := api.EncodeResponse(to, resp, "fixture-model")
					if err != nil {
						t.Fatalf("encode as %s: %v", to, err)
					}
					back, err := api.DecodeResponse(to, b)
					if err != nil {
						t.Fatalf("decode the %s answer: %v\n%s", to, err, b)
					}
					sameStreamAnswer(t, streamDir[from]+" as "+streamDir[to], to, resp, back)
				}
			})
		}
	}
}

// TestRecordedStreamsCommitPoint checks the commit-point watcher of each API
// on every documented stream of that API (SPEC POOL-7): the first event it
// calls visible is the first event that gives the client text, reasoning,
// tool-call arguments or a named tool call (what the API's decoder reads
// from it); a stream ended by the provider's error event is flagged at that
// event, with the provider's message; a complete stream ends cleanly; and the
// usage the watcher accounts is the usage the stream reports.
func TestRecordedStreamsCommitPoint(t *testing.T) {
	for _, kind := range streamAPIs {
		for _, rec := range streamFixtures(t, kind) {
			t.Run("POOL-7/"+streamDir[kind]+"/"+rec.name, func(t *testing.T) {
				want := assembleStream(t, kind, rec.events)
				w := api.For(kind).NewWatcher()
				committed, ended := false, false
				visibleAt, errAt := -1, -1
				var errObs neutral.Observation
				for i := range rec.events {
					obs := w.Observe(&rec.events[i], committed)
					switch obs.Verdict {
					case neutral.VVisible:
						if !committed {
							visibleAt, committed = i, true
						}
					case neutral.VEnd:
						ended = true
					case neutral.VError:
						if errAt < 0 {
							errAt, errObs = i, obs
						}
					}
				}
				if ce, ok := w.(neutral.CleanEnder); ok && ce.EndedCleanly() {
					ended = true
				}
				if visibleAt != want.firstVisible {
					t.Errorf("commit point at event %d, want %d (the first visible output)", visibleAt, want.firstVisible)
				}
				if errAt != want.errAt {
					t.Errorf("error flagged at event %d, want %d", errAt, want.errAt)
				}
				if want.err != nil {
					if errObs.ErrMsg != want.err.Message || errObs.ErrStatus < 400 {
						t.Errorf("error observed as %+v, want the message %q and an error status", errObs, want.err.Message)
					}
					return
				}
				if !ended {
					t.Errorf("a complete stream does not end cleanly")
				}
				u := want.resp.Usage
				got := w.Usage()
				if got.Input != u.Input || got.CacheRead != u.CacheRead || got.CacheCreation != u.CacheWrite || got.Output != u.Output {
					t.Errorf("watcher usage %+v, the stream reports %+v", got, u)
				}
			})
		}
	}
}
