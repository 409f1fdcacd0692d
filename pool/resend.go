package pool

import (
	"errors"
	"net/http"
)

// closedUnanswered is the Transport's mark of a request that went out on a
// kept-alive connection the channel closed before one byte of the answer
// (the proxy's upstream.ClosedUnansweredError, found by its method: the
// pool imports nothing of the proxy; Options.Transport).
type closedUnanswered interface{ ClosedUnanswered() bool }

// isClosedUnanswered reports whether err carries that mark.
func isClosedUnanswered(err error) bool {
	var cu closedUnanswered
	return errors.As(err, &cu) && cu.ClosedUnanswered()
}

// sendMember sends member m the request req through the Transport. When it
// fails on a kept-alive connection the channel closed before one byte of
// the answer (an idle timeout that fired as the request came, a server
// that closes after every answer without "Connection: close"), it is sent
// once more to the same member on a connection of its own (req.Close:
// the Transport takes no idle connection for it), as the Anthropic and
// OpenAI SDKs retry a connection error; never a third time, and the
// session does not move for it (SPEC POOL-26). A body beyond the replay
// budget is not sent again (SPEC POOL-17); nor is one whose call ended.
// Each resend is logged and told to Observer.Resend.
func (c *call) sendMember(m string, req *http.Request) (*http.Response, error) {
	resp, err := c.p.opts.Transport.RoundTrip(req)
	if err == nil || c.oneMember || req.GetBody == nil || req.Context().Err() != nil || !isClosedUnanswered(err) {
		return resp, err
	}
	body, gerr := req.GetBody()
	if gerr != nil {
		return nil, err
	}
	again := req.Clone(req.Context())
	again.Body, again.Close = body, true
	c.p.log.Info("pool member's kept-alive connection closed unanswered; sent once more on a new connection",
		"pool", c.pc.ID, "member", m, "session", c.session)
	if f := c.p.opts.Observer.Resend; f != nil {
		f(c.pc.ID, m)
	}
	return c.p.opts.Transport.RoundTrip(again)
}
