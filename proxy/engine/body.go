package engine

import (
	"errors"
	"io"
	"sync"
)

// MaxReplayBody is the largest request body (bytes) buffered so it can be
// replayed on another candidate (SPEC HTTP-2). Larger bodies, and chunked
// bodies that grow past it, are streamed once: the first MaxReplayBody
// bytes of a chunked body are buffered, the remainder is read from the
// client while it is sent. A streamed body can still move to the next
// candidate as long as none of its unbuffered bytes were read (a failure to
// connect), never after.
const MaxReplayBody = 8 << 20

// errBodyDetached is returned to an attempt that is no longer the owner of
// a streamed body (its request was abandoned).
var errBodyDetached = errors.New("request body belongs to another attempt")

// Body is a plain request's body as the attempts send it. Buf holds the buffered bytes: the whole body when Rest is nil,
// else a prefix. Rest, when set, is the remainder, read once by the
// attempt that owns it: an attempt takes ownership only while no byte of
// Rest was read, so a streamed body moves to the next candidate after a
// failure to connect, never after it started. The zero value is an empty
// body; Buf and Rest must not change once a request carrying it is sent.
type Body struct {
	Buf  []byte
	Rest io.Reader // nil: fully buffered (replayable)

	mu        sync.Mutex
	owner     *attemptBody
	started   bool  // a read of Rest began: the body cannot be sent again
	done      bool  // Rest read to its end
	clientErr error // reading Rest failed (the client left or sent a malformed body)
}

// open returns a reader over the whole body for one attempt and makes that
// attempt the owner of Rest, checking and switching under one lock: ok is
// false when unbuffered bytes were already read (the body cannot be sent
// again). The reader is nil for an empty body.
func (b *Body) open() (a *attemptBody, ok bool) {
	if b.Rest == nil && len(b.Buf) == 0 {
		return nil, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		return nil, false
	}
	a = &attemptBody{b: b}
	b.owner = a
	return a, true
}

// Finished reports whether the body was read to its end, so the client
// connection is positioned at the next request and no attempt reads it
// any more.
func (b *Body) Finished() bool {
	if b.Rest == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done
}

// clientFailed returns the error of a failed read of Rest (the client left
// or sent a malformed body), or nil.
func (b *Body) clientFailed() error {
	if b.Rest == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.clientErr
}

// attemptBody is the body as one attempt's transport reads it: Buf, then
// Rest while the attempt owns it. Close does not touch the client
// connection.
type attemptBody struct {
	b   *Body
	off int
}

func (a *attemptBody) Read(p []byte) (int, error) {
	b := a.b
	if a.off < len(b.Buf) {
		n := copy(p, b.Buf[a.off:])
		a.off += n
		return n, nil
	}
	if b.Rest == nil {
		return 0, io.EOF
	}
	b.mu.Lock()
	switch {
	case b.owner != a:
		b.mu.Unlock()
		return 0, errBodyDetached
	case b.clientErr != nil:
		b.mu.Unlock()
		return 0, b.clientErr
	case b.done:
		b.mu.Unlock()
		return 0, io.EOF
	}
	b.started = true
	b.mu.Unlock()
	// Only the owner reads Rest, and ownership moves only while !started,
	// so this read never runs concurrently with another.
	n, err := b.Rest.Read(p)
	if err == nil {
		return n, nil
	}
	b.mu.Lock()
	if err == io.EOF {
		b.done = true
	} else {
		b.clientErr = err
	}
	b.mu.Unlock()
	return n, err
}

// Close is a no-op: the transport closes request bodies, but the client
// connection outlives the attempt.
func (a *attemptBody) Close() error { return nil }
