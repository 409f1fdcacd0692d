package ctxdone

import (
	"context"
	"testing"
	"time"
)

func TestEnded(t *testing.T) {
	t.Run("HTTP-4/live-context-has-not-ended", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if Ended(ctx) || Ended(context.Background()) {
			t.Fatal("Ended of a live context")
		}
	})
	t.Run("HTTP-4/cancelled-context-has-ended", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(context.Canceled)
		if !Ended(ctx) {
			t.Fatal("a cancelled context has not ended")
		}
	})
	t.Run("HTTP-4/context-past-its-deadline-has-ended", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		if !Ended(ctx) {
			t.Fatal("a context past its deadline has not ended")
		}
	})
}
