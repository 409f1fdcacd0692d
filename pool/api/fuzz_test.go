package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/dual-proxy/dual-proxy/pool/apikind"
)

// FuzzStreamDecoders feeds arbitrary SSE events (name "\x00" data, events
// separated by "\n\n") to every decoder and the decoded events to every
// encoder: nothing may panic, and every encoded data line must be JSON (or
// Chat's [DONE]). The first byte picks the upstream API.
func FuzzStreamDecoders(f *testing.F) {
	for _, sf := range streamFeatures {
		for i, api := range apis {
			var b bytes.Buffer
			b.WriteByte(byte(i))
			for _, e := range sf.forms[api] {
				b.WriteString(e.name + "\x00" + e.data + "\n\n")
			}
			f.Add(b.Bytes())
		}
	}
	for i, api := range []apikind.Kind{apikind.Anthropic, apikind.Chat, apikind.Responses} {
		var b bytes.Buffer
		b.WriteByte(byte(i))
		for _, e := range argsStream(api, []string{`{"a":"\`, `u00e9"}`}) {
			b.WriteString(e.name + "\x00" + e.data + "\n\n")
		}
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		from := apis[int(in[0])%len(apis)]
		for _, to := range apis {
			s := NewStream(from, to, "m")
			var out []byte
			failed := false
			for _, block := range bytes.Split(in[1:], []byte("\n\n")) {
				name, data, _ := bytes.Cut(block, []byte{0})
				b, err := s.Feed(string(name), data)
				if err != nil {
					failed = true
					break
				}
				out = append(out, b...)
			}
			if !failed {
				b, _ := s.End()
				out = append(out, b...)
			}
			checkSSE(t, out)
		}
	})
}

func checkSSE(t *testing.T, out []byte) {
	for _, line := range bytes.Split(out, []byte("\n")) {
		d, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok || string(d) == "[DONE]" {
			continue
		}
		if !json.Valid(d) {
			t.Fatalf("encoded data is not JSON: %q", d)
		}
	}
}

// FuzzRequestDecoders decodes arbitrary bodies as each API and encodes the
// result into every API: no panics, and every encoded body is JSON.
func FuzzRequestDecoders(f *testing.F) {
	for _, rf := range reqFeatures {
		for i, api := range apis {
			if form, ok := rf.Forms[api]; ok {
				f.Add(append([]byte{byte(i)}, compact(form)...))
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		r, err := DecodeRequest(apis[int(in[0])%len(apis)], in[1:], "m", true)
		if err != nil {
			return
		}
		for _, to := range apis {
			if b, err := EncodeRequest(to, r); err == nil && !json.Valid(b) {
				t.Fatalf("%s: not JSON: %s", to, b)
			}
		}
	})
}
