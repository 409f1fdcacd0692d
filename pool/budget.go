package pool

import "sync/atomic"

// DefaultBodyBudget is the request-body bytes all calls of one Pool may hold
// for failover replay at once, like the proxy's buffering
// budget for plain HTTP.
const DefaultBodyBudget = 256 << 20

// bodyBudget counts the request-body bytes held for replay. A body that
// does not fit is still served, by one member only: it is sent once and
// not kept for a second member (no silent failover for that call), so the
// memory held across long model calls stays bounded. Safe for concurrent
// use.
type bodyBudget struct {
	limit int64
	used  atomic.Int64
}

// take reserves n bytes; false when they do not fit (nothing reserved).
func (b *bodyBudget) take(n int64) bool {
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

// give returns n bytes taken before.
func (b *bodyBudget) give(n int64) { b.used.Add(-n) }
