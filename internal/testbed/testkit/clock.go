package testkit

import (
	"sync"
	"time"
)

// Clock is a manual clock for code that takes a func() time.Time (Config.Now
// and the like): it stands still until Advance moves it. Safe for concurrent
// use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// Epoch is a fixed start time for tests whose clock value itself does not
// matter, only how far it moves: NewClock(Epoch).
var Epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// NewClock returns a clock that reads start until it is advanced.
func NewClock(start time.Time) *Clock { return &Clock{t: start} }

// Now returns the clock's current time; pass c.Now where a clock is injected.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d (backward when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
