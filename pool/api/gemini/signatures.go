package gemini

import (
	"bytes"
	"encoding/json"

	"github.com/dual-proxy/dual-proxy/pool/api/neutral"
	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// Reasoning signatures (the rule is in package pool,
// signatures.go). Anthropic's thinking blocks carry a signature and its
// redacted_thinking blocks encrypted data, Gemini's parts a
// thoughtSignature: each verifies only at the provider (account) that
// minted it, which answers 400 for any other ("messages.N.content.M:
// Invalid `signature` in `thinking` block", "Corrupted thought
// signature."). The pool keys each by SigKey and remembers who minted it
// like the Responses state (RecordOwner).

// geminiSigKeys lists the thoughtSignature keys of a Gemini answer or
// stream chunk.
func geminiSigKeys(body []byte) []string {
	if !bytes.Contains(body, neutral.QuotedThoughtSig) {
		return nil
	}
	var a struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Sig string `json:"thoughtSignature"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if json.Unmarshal(body, &a) != nil {
		return nil
	}
	var keys []string
	for _, c := range a.Candidates {
		for _, p := range c.Content.Parts {
			if p.Sig != "" && p.Sig != skipSignature {
				keys = append(keys, neutral.SigKey(p.Sig))
			}
		}
	}
	return keys
}

// StateKeys implements StateReader: the thought signature keys of a
// Gemini answer (SPEC POOL-18).
func (Flavour) StateKeys(body []byte) []string { return geminiSigKeys(body) }

// StateKeys implements StateWatcher: the thought signature keys of the
// stream so far, recorded with their minter so no other member is sent
// them.
func (w *geminiWatcher) StateKeys() []string { return w.sigs }

// geminiRequestSigKeys lists the thoughtSignature keys of a generateContent
// request body's contents (the placeholder has none).
func geminiRequestSigKeys(body []byte) []string {
	var keys []string
	stripThoughtSignatures(body, func(key string) bool { keys = append(keys, key); return true })
	return keys
}

// stripThoughtSignatures returns a generateContent request body whose
// thoughtSignatures keep refuses are replaced by skipSignature, the
// placeholder Gemini documents for history it cannot verify (a function
// call part must keep a signature on Gemini 3, so the part stays). The
// body itself when nothing changes.
func stripThoughtSignatures(body []byte, keep func(key string) bool) []byte {
	if !bytes.Contains(body, neutral.QuotedThoughtSig) {
		return body
	}
	var out []byte
	last := 0
	var walk func(b []byte, base, depth int)
	walk = func(b []byte, base, depth int) {
		if depth > 64 {
			return
		}
		if i := jsonscan.SkipWS(b, 0); i >= len(b) || b[i] != '{' {
			jsonscan.EachElement(b, func(vs, ve int) bool {
				if bytes.Contains(b[vs:ve], neutral.QuotedThoughtSig) {
					walk(b[vs:ve], base+vs, depth+1)
				}
				return true
			})
			return
		}
		jsonscan.EachMember(b, func(k string, vs, ve int) bool {
			if k == "thoughtSignature" {
				var sig string
				if json.Unmarshal(b[vs:ve], &sig) == nil && sig != skipSignature && sig != "" && !keep(neutral.SigKey(sig)) {
					out = append(append(out, body[last:base+vs]...), `"`+skipSignature+`"`...)
					last = base + ve
				}
				return true
			}
			if bytes.Contains(b[vs:ve], neutral.QuotedThoughtSig) {
				walk(b[vs:ve], base+vs, depth+1)
			}
			return true
		})
	}
	walk(body, 0, 0)
	if out == nil {
		return body
	}
	return append(out, body[last:]...)
}

// SignatureKeys are the keys of the thoughtSignatures in a request's
// history (geminiRequestSigKeys); Gemini has no unsigned reasoning to report.
func (Flavour) SignatureKeys(body []byte) ([]string, bool) { return geminiRequestSigKeys(body), false }

// StripSignatures neutralises the thoughtSignatures keep refuses
// (stripThoughtSignatures).
func (Flavour) StripSignatures(body []byte, keep func(key string) bool) []byte {
	return stripThoughtSignatures(body, keep)
}
