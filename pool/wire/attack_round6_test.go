package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// Round-six attack checks on the word-at-a-time request scanner, the SSE
// line split and the lazily computed POOL-5 content hash (issue 20).

// TestAttackRound6SkipString: a '"' or '\\' at every offset mod 8, after
// ASCII, multibyte UTF-8, invalid UTF-8 and high bytes (which set the SWAR
// test's borrow bits), at the buffer's end or not, agrees with the
// byte-by-byte rule.
func TestAttackRound6SkipString(t *testing.T) {
	t.Run("POOL-17/skip-string-every-offset", func(t *testing.T) {
		fills := []string{"a", "é", "\xff", "\x80", "✓", "\x00", "\x7f", "!", "[", "]"}
		for _, fill := range fills {
			for n := range 24 {
				pre := strings.Repeat(fill, n)
				for _, tail := range []string{`"`, `\"x"`, `\\"`, `\u0022"`, `\`, ``, `"` + strings.Repeat("z", 9)} {
					b := []byte(`"` + pre + tail)
					for i := range b {
						if got, want := skipString(b, i), skipStringRef(b, i); got != want {
							t.Fatalf("skipString(%q, %d) = %d, byte-by-byte %d", b, i, got, want)
						}
					}
				}
			}
		}
	})
	t.Run("POOL-17/huge-string-and-deep-nesting", func(t *testing.T) {
		big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat(`ab\"c\\✓`, 1<<17) + `"}]}`
		if err := CheckTopLevel([]byte(big)); err != nil {
			t.Fatalf("4 MiB escaped string: %v", err)
		}
		deep := strings.Repeat(`{"a":[`, 200) + `"x"` + strings.Repeat(`]}`, 200)
		if skipValue([]byte(deep), 0) != -1 {
			t.Fatal("nesting beyond maxScanDepth accepted")
		}
	})
}

// TestAttackRound6SSE: CR-only, CRLF and LF line ends, each split at every
// read boundary, and a data line longer than the reader's 32 KiB buffer,
// give the same events as one read.
func TestAttackRound6SSE(t *testing.T) {
	t.Run("POOL-7/line-ends-split-across-reads", func(t *testing.T) {
		long := strings.Repeat("x", 40<<10)
		for _, end := range []string{"\n", "\r", "\r\n"} {
			in := "event: a" + end + "data: 1" + end + end + "data: " + long + end + "data: 2" + end + end + ": c" + end + end
			for _, chunk := range []int{1, 2, 3, 7, 8, 9, 4095, 32 << 10} {
				whole := NewSSEReader(strings.NewReader(in))
				split := NewSSEReader(iotest.HalfReader(&chunked{b: []byte(in), n: chunk}))
				for k := 0; ; k++ {
					w, werr := whole.Next()
					g, gerr := split.Next()
					if werr != gerr || g.Name != w.Name || !bytes.Equal(g.Data, w.Data) || g.Comment != w.Comment {
						t.Fatalf("end %q chunk %d event %d: split %q %v, whole %q %v", end, chunk, k, g.Data, gerr, w.Data, werr)
					}
					if werr != nil {
						break
					}
					if k == 1 && len(w.Data) != len(long)+len("\n2") {
						t.Fatalf("end %q: the long event has %d data bytes", end, len(w.Data))
					}
				}
				whole.Release()
				split.Release()
			}
		}
	})
}

// chunked reads b n bytes at a time.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}

// TestAttackRound6ContentHash: the lazily computed content hash of a bare
// request is the hash the eager code computed (values from 8555297, before
// issue 20's change), so a session keeps its member across the upgrade;
// SessionContentHash is stable when called twice and "" after Release.
func TestAttackRound6ContentHash(t *testing.T) {
	t.Run("POOL-5/content-hash-unchanged-by-lazy-hash", func(t *testing.T) {
		for i, g := range []struct {
			fl         Flavour
			ep         Endpoint
			body, want string
		}{
			{AnthropicFlavour{}, Endpoint{Kind: EpGenerate}, `{"model":"m","system":"s <&> \u2028","messages":[{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"user","content":"2"}]}`, "3846e1a6cdda523ef82619e885db949064dd2a9d09eb71bb8105e5148de8a712"},
			{AnthropicFlavour{}, Endpoint{Kind: EpGenerate}, `{"model":"m","system":[{"type":"text","text":"s1"},{"type":"text","text":"s2"}],"messages":[{"role":"user","content":"hi"}]}`, "06d60c5b1b8c0e0cb46aa43f8225d5fba1be3600f9bc095a90119bfeca766b8c"},
			{AnthropicFlavour{}, Endpoint{Kind: EpGenerate}, `{"model":"m","messages":[{"role":"user","content":"only user"}]}`, "db186c14fd05ff0bcba1ec97fe21f9ac2ece7a1458d61f4b63060d4916956180"},
			{ChatFlavour{}, Endpoint{Kind: EpGenerate}, `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"developer","content":[{"type":"text","text":"d <b>"}]},{"role":"user","content":"hi"},{"role":"system","content":"late"}]}`, "637a2bc4e4285c6de50be497ce54943ca40e17d2a8105fb5d7ad74ea3976ff0d"},
			{ChatFlavour{}, Endpoint{Kind: EpGenerate}, `{"model":"m","messages":[{"role":"user","content":"no system"}]}`, "5255831843f1734c9b4c7f6fa882579863c61f613dd1c97ac1988e100ab7dffb"},
			{ChatFlavour{}, Endpoint{Kind: EpGenerate}, `{"model":"m","messages":[{"role":"system","content":"x & y"},{"role":"user","content":"u"}]}`, "2d5b173ad2129bc777609215250051854d0e91d69728f26a6cc57ef5ad609157"},
			{ResponsesFlavour{}, Endpoint{Kind: EpGenerate}, `{"model":"m","instructions":"be brief","input":"hello"}`, "260401c26ade7c1fd1ecafe405dd6fa0eadce0acf27c9ef96b082e0a61a46a09"},
			{ResponsesFlavour{}, Endpoint{Kind: EpGenerate}, `{"model":"m","input":[{"role":"developer","content":"d"},{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"role":"user","content":"x"}]}`, "63733bea1bd40cb27059e674dfb9573700893de8a733662f361d57d3ba1a00b9"},
			{GeminiFlavour{}, Endpoint{Kind: EpGenerate, Model: "g"}, `{"systemInstruction":{"parts":[{"text":"s"}]},"contents":[{"role":"model","parts":[{"text":"m"}]},{"parts":[{"text":"u"}]}]}`, "9d7127d43d68e18471986d62693470a097940faa9656b6d3e4dd6dc0983b304b"},
			{GeminiFlavour{}, Endpoint{Kind: EpGenerate, Model: "g"}, `{"system_instruction":{"parts":[{"text":"s2"}]},"contents":[{"role":"user","parts":[{"text":"u"}]}]}`, "ae7150c4e2f74f5056c89824ba55a401f56b9b71f8eb09ecde4f6bd113c7ab97"},
		} {
			ci, err := g.fl.ParseRequest(g.ep, []byte(g.body))
			if err != nil {
				t.Fatal(err)
			}
			if ci.ContentHash != "" {
				t.Fatalf("%d: hashed at parse", i)
			}
			if got := ci.SessionContentHash(); got != "content:"+g.want || ci.SessionContentHash() != got {
				t.Fatalf("%d %T: content hash %q, before issue 20 content:%s", i, g.fl, got, g.want)
			}
			late, _ := g.fl.ParseRequest(g.ep, []byte(g.body))
			late.Release()
			if late.SessionContentHash() != "" {
				t.Fatalf("%d: hashed after Release", i)
			}
		}
	})
}

// TestAttackRound6ValidNested: validJSON's own stack of closers (f5bb33f)
// agrees with json.Valid around its 64-level buffer's growth and for a
// wrong closer, a missing one, a trailing comma or a stray value at every
// level of a mixed nest.
func TestAttackRound6ValidNested(t *testing.T) {
	t.Run("POOL-17/valid-nested-agrees-with-json-valid", func(t *testing.T) {
		for _, n := range []int{1, 2, 63, 64, 65, 66, 129} {
			var open, closeAll []string
			for k := range n {
				if k%2 == 0 {
					open, closeAll = append(open, `{"k`+strings.Repeat(`\"`, k%3)+`": `), append([]string{"}"}, closeAll...)
				} else {
					open, closeAll = append(open, "[1, "), append([]string{"]"}, closeAll...)
				}
			}
			good := strings.Join(open, "") + `"v"` + strings.Join(closeAll, "")
			bodies := []string{good, good[:len(good)-1], good + "]", good + " ", "[" + good + "," + good + "]"}
			for k := range n {
				c := []string(append([]string(nil), closeAll...))
				c[k] = map[string]string{"}": "]", "]": "}"}[c[k]]
				bodies = append(bodies, strings.Join(open, "")+`"v"`+strings.Join(c, ""))
				c[k] = "," + closeAll[k]
				bodies = append(bodies, strings.Join(open, "")+`"v"`+strings.Join(c, ""))
				c[k] = ` 2` + closeAll[k]
				bodies = append(bodies, strings.Join(open, "")+`"v"`+strings.Join(c, ""))
			}
			for _, b := range bodies {
				if got, want := validJSON([]byte(b)), json.Valid([]byte(b)); got != want {
					t.Fatalf("depth %d: validJSON %v, json.Valid %v for\n%s", n, got, want, b)
				}
			}
		}
	})
}
