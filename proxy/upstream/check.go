package upstream

import (
	"errors"
	"fmt"

	"golang.org/x/net/http/httpguts"
)

// ErrInvalidRequest is returned (wrapped) by Send for a request it refuses
// to write, before dialing: a method that is not a token, a field name
// that is not a token, a field value with CR, LF, NUL or another control
// character (RFC 9110 §5.5), or a target or Host with control characters
// or spaces. Writing them would let a caller of the exported Transport
// inject header lines or a second request; net/http refuses the same.
// The error never quotes the offending value.
var ErrInvalidRequest = errors.New("invalid request")

// check validates r as net/http's Transport does (validMethod,
// httpguts.ValidHeaderFieldName/Value, ValidHostHeader), plus the
// request-targets, which Send writes as given; the fields only when the
// caller has not (Request.HeaderValid).
func (r *Request) check() error {
	invalid := func(what string) error { return fmt.Errorf("%w: %s", ErrInvalidRequest, what) }
	if !validToken(r.Method) {
		return invalid("method is not a token")
	}
	if !validTarget(r.Origin) || !validTarget(r.Absolute) {
		return invalid("request-target has spaces or control characters")
	}
	if !httpguts.ValidHostHeader(r.Authority) {
		return invalid("host has invalid characters")
	}
	if r.HeaderValid {
		return nil
	}
	for _, f := range r.Header {
		if !httpguts.ValidHeaderFieldName(f.Name) {
			return invalid("header field name is not a token")
		}
		if !httpguts.ValidHeaderFieldValue(f.Value) {
			return invalid("header field value has control characters")
		}
	}
	return nil
}

// validToken reports whether s is a non-empty RFC 9110 §5.6.2 token.
func validToken(s string) bool { return httpguts.ValidHeaderFieldName(s) }

// validTarget reports whether a request-target has no byte that could end
// or split the request line: no SP, no control character, no DEL.
func validTarget(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return s != ""
}
