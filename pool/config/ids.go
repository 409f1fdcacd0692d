package config

import (
	"strconv"
	"strings"
)

// The id alphabet: pool ids, channel ids and the ids of a
// pool's unified models are 1 to 64 of A-Z a-z 0-9 '.' '_' '-'. A pool id is
// a path segment of every pool URL (/pool/ID/v1/…) and goes into agent
// configurations (Codex's -c provider name, base URLs); a unified model id
// is what agents are configured with and what the Gemini API puts in its
// path (models/ID:generateContent). Outside the alphabet an id could not be
// routed ('/', '?', '#'), would carry control bytes into logs and
// terminals, or break out of a quoted string in a configuration it is
// written into. A channel's own model ids are the upstream's names, which
// use ':' (Ollama tags, "qwen2.5:7b") and '/' ("deepseek-ai/DeepSeek-V3")
// too: they get the alphabet plus those two, up to 128 bytes.

// maxID and maxUpstreamModelID bound an id's length (bytes).
const (
	maxID              = 64
	maxUpstreamModelID = 128
)

// idHint is the error message for an id outside the alphabet.
const idHint = "not a valid id: use 1 to 64 letters, digits, '.', '_' or '-' (the id goes into URLs and agent configurations)"

// upstreamModelHint is the message for a channel model id outside its
// alphabet.
const upstreamModelHint = "not a valid model id: use 1 to 128 letters, digits, '.', '_', '-', ':' or '/'"

// ValidID reports whether id is in the id alphabet: 1 to 64 bytes of
// A-Z a-z 0-9 '.' '_' '-', and not "." or ".." (path segments that URL
// clients resolve away).
func ValidID(id string) bool { return id != "." && id != ".." && validIn(id, maxID, "") }

// validUpstreamModelID reports whether id may name a channel's model: the
// id alphabet plus ':' and '/', 1 to 128 bytes.
func validUpstreamModelID(id string) bool { return validIn(id, maxUpstreamModelID, ":/") }

// validIn reports whether s is 1 to maxLen bytes of letters, digits, '.',
// '_', '-' and the bytes of extra.
func validIn(s string, maxLen int, extra string) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		case strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}

// idErr is the error at path p for an id outside the alphabet, nil for a
// good one.
func idErr(id, p string) error {
	if ValidID(id) {
		return nil
	}
	return cfgErr(p, idHint)
}

// printablePath is p as an error shows it: quoted when it holds a byte that
// is not printable ASCII (an id with a control byte, refused by idErr, must
// not reach a terminal raw).
func printablePath(p string) string {
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] >= 0x7f {
			return strconv.Quote(p)
		}
	}
	return p
}
