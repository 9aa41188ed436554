// Package wait sleeps until a time or for a duration, giving up early when a context
// ends or a stop channel closes: the one way long-running parts pause.
package wait

import (
	"context"
	"time"
)

// Until waits until t and reports true, or false as soon as ctx ends or stop (nil for
// none) is closed. A time already past returns at once, still checking ctx and stop.
func Until(ctx context.Context, stop <-chan struct{}, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		if ctx.Err() != nil {
			return false
		}
		select {
		case <-stop:
			return false
		default:
			return true
		}
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	case <-timer.C:
		return true
	}
}

// For waits for d; see Until.
func For(ctx context.Context, d time.Duration) bool {
	return Until(ctx, nil, time.Now().Add(d))
}
