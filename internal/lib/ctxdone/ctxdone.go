// Package ctxdone answers whether a context has ended, cheaply enough to
// ask on every request's way through the proxy.
package ctxdone

import "context"

// Ended reports whether ctx is done: cancelled (the client left, the
// server shuts down) or past its deadline. It is the question a request
// asks before it starts another attempt, records a failure as the path's,
// or keeps its client connection for the next request.
//
// It polls ctx.Done() without blocking, which takes no lock whether or not
// ctx has ended: ctx.Err() takes the done channel's lock once ctx has
// ended and context.Cause the context's mutex, and a plain request asks
// several times, from racing attempts of one request at once.
func Ended(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}
