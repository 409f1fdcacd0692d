package api

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dual-proxy/dual-proxy/pool/api/chat"
	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

func TestMain(m *testing.M) {
	// Golden output: fixed ids and clock.
	neutral.NewID = func(prefix string) string { return prefix + "test" }
	chat.Now = func() time.Time { return time.Unix(1700000000, 0) }
	os.Exit(m.Run())
}

var apis = []apikind.Kind{apikind.Anthropic, apikind.Chat, apikind.Responses, apikind.Gemini}

// volatileKeys are removed before comparing: ids and clocks that differ per
// API by design (tool call ids are kept: objects with "name" or "function").
var volatileKeys = []string{"created", "created_at", "responseId", "item_id"}

func normalize(t *testing.T, doc []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, doc)
	}
	var walk func(any)
	walk = func(x any) {
		switch m := x.(type) {
		case map[string]any:
			for _, k := range volatileKeys {
				delete(m, k)
			}
			_, named := m["name"]
			_, fn := m["function"]
			if !named && !fn {
				delete(m, "id")
			}
			for _, c := range m {
				walk(c)
			}
		case []any:
			for _, c := range m {
				walk(c)
			}
		}
	}
	walk(v)
	b, _ := json.Marshal(v)
	return string(b)
}

func decodeReq(t *testing.T, api apikind.Kind, body string) (*neutral.Request, error) {
	t.Helper()
	return DecodeRequest(api, []byte(body), "m", false)
}

// parseSSE splits SSE bytes into (name, data) pairs (test-side parser;
// the encoders write one "event:" and one "data:" line at most).
type sseEv struct{ name, data string }

func parseSSE(t *testing.T, b []byte) []sseEv {
	t.Helper()
	var out []sseEv
	for _, block := range strings.Split(string(b), "\n\n") {
		if block == "" {
			continue
		}
		var ev sseEv
		comment := true
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name, comment = line[7:], false
			case strings.HasPrefix(line, "data: "):
				ev.data, comment = line[6:], false
			case strings.HasPrefix(line, ":"):
			default:
				t.Fatalf("bad SSE line %q in %q", line, b)
			}
		}
		if !comment {
			out = append(out, ev)
		}
	}
	return out
}

// runStream feeds events of API from through a Stream to API to and returns
// the client events.
func runStream(t *testing.T, from, to apikind.Kind, in []sseEv) ([]sseEv, error) {
	t.Helper()
	s := NewStream(from, to, "m")
	var out []byte
	for _, ev := range in {
		b, err := s.Feed(ev.name, []byte(ev.data))
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	b, err := s.End()
	if err != nil {
		return nil, err
	}
	return parseSSE(t, append(out, b...)), nil
}

func fieldOf(err error) string {
	var fe *neutral.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

// compact re-marshals a JSON literal written across lines in a test.
func compact(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic("test JSON: " + err.Error() + "\n" + s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
