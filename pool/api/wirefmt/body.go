package wirefmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dual-proxy/dual-proxy/pool/internal/jsonscan"
)

// ErrBodyTooLarge is ReadBody's error for a body above its limit.
var ErrBodyTooLarge = errors.New("request body too large")

// ReadBody reads at most limit bytes of r.
func ReadBody(r io.Reader, limit int64) ([]byte, error) {
	return ReadBodySized(r, -1, limit)
}

// ReadBodySized reads at most limit bytes of r into one buffer of the
// announced size n (a Content-Length; -1 unknown), so a large body is held
// once instead of in doubling copies (SPEC POOL-17). n above limit is
// ErrBodyTooLarge at once, nothing read.
func ReadBodySized(r io.Reader, n, limit int64) ([]byte, error) {
	if n > limit {
		return nil, ErrBodyTooLarge
	}
	if n > 0 {
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		var one [1]byte
		if k, _ := r.Read(one[:]); k == 0 {
			return buf, nil
		}
		return nil, ErrBodyTooLarge // more than announced
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, ErrBodyTooLarge
	}
	return b, nil
}

// guardedKeys are the top-level request keys the pool reads and rewrites.
// encoding/json (ParseRequest) takes the last of several keys that match
// case-insensitively, while a member's server may take the first: two such
// keys would let the pool check one model id and send another, bypassing the
// pool's model list. CheckTopLevel refuses them.
var guardedKeys = []string{"model", "stream", "thinking", "output_config", "reasoning_effort", "reasoning"}

// CheckTopLevel refuses (with the 400 message) a request body whose top-level
// object holds more than one key equal to a guarded key under Unicode case
// folding (strings.EqualFold, the rule encoding/json matches field names
// by), a "model" that is not a string ("model must be a string") or a
// "stream" that is not a boolean ("stream must be a boolean"). A body that
// is not a JSON object passes; ParseRequest reports it.
func CheckTopLevel(body []byte) error {
	seen := make([]int, len(guardedKeys))
	var err error
	jsonscan.EachMember(body, func(k string, vs, ve int) bool {
		for i, g := range guardedKeys {
			if strings.EqualFold(k, g) {
				if seen[i]++; seen[i] > 1 {
					err = fmt.Errorf("%s: the request body has more than one %q key (keys are matched case-insensitively)", g, g)
					return false
				}
			}
		}
		v := string(body[vs:min(ve, vs+5)])
		switch {
		case strings.EqualFold(k, "model") && body[vs] != '"':
			err = errors.New("model must be a string")
		case strings.EqualFold(k, "stream") && (ve-vs > 5 || (v != "true" && v != "false" && v != "null")):
			err = errors.New("stream must be a boolean")
		}
		return err == nil
	})
	return err
}

// SpliceTopLevel replaces the value of key in the top-level JSON object body
// with val (body itself when the value is already val), leaving every other
// byte as the client sent it (so the upstream sees the same prompt bytes). The key is matched like encoding/json matches
// it (strings.EqualFold; CheckTopLevel has refused duplicates). ok is false
// when body is not an object or has no such key.
func SpliceTopLevel(body []byte, key string, val []byte) (out []byte, ok bool) {
	jsonscan.EachMember(body, func(k string, vs, ve int) bool {
		if !strings.EqualFold(k, key) {
			return true
		}
		if ok = true; bytes.Equal(body[vs:ve], val) {
			out = body // unchanged (the usual model id = target): no copy
			return false
		}
		out = make([]byte, 0, len(body)-(ve-vs)+len(val))
		out = append(append(append(out, body[:vs]...), val...), body[ve:]...)
		return false
	})
	return out, ok
}

// LowerField sets the number at key of the JSON object obj to limit when
// it is above it; obj as is otherwise.
func LowerField(obj []byte, key string, limit int) []byte {
	v, ok := TopValue(obj, key)
	if !ok {
		return obj
	}
	var n float64
	if json.Unmarshal(v, &n) != nil || n <= float64(limit) {
		return obj
	}
	out, _ := SpliceTopLevel(obj, key, []byte(strconv.Itoa(limit)))
	return out
}

// TopValue is the value of key in the top-level JSON object b, matched as
// SpliceTopLevel matches it.
func TopValue(b []byte, key string) (v []byte, ok bool) {
	jsonscan.EachMember(b, func(k string, vs, ve int) bool {
		if strings.EqualFold(k, key) {
			v, ok = b[vs:ve], true
			return false
		}
		return true
	})
	return v, ok
}
