package lifecycle

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
)

// TestGroupCloseDuringStart: a Close that comes while a member starts lets that member
// finish starting, closes it and those before it in reverse order, and starts no other;
// Start fails with ErrClosed and Close and Wait report a clean stop. (Inside the
// package: the test waits for Close to have asked the group to stop, which only the
// group's State shows.)
func TestGroupCloseDuringStart(t *testing.T) {
	var mu sync.Mutex
	var log []string
	add := func(e string) { mu.Lock(); log = append(log, e); mu.Unlock() }
	member := func(name string, during func()) Member {
		return Member{Name: name, Part: Step(func(context.Context) error {
			add("start " + name)
			if during != nil {
				during()
			}
			return nil
		}, func() error { add("close " + name); return nil })}
	}
	var g *Group
	closed := make(chan error, 1)
	g = NewGroup(member("a", nil), member("b", func() {
		go func() { closed <- g.Close() }()
		<-g.life.Stopping() // Close has asked the group to stop
	}), member("c", nil))
	if err := g.Start(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start: %v, want ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v, want nil", err)
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("Wait: %v, want nil", err)
	}
	if want := []string{"start a", "start b", "close b", "close a"}; !slices.Equal(log, want) {
		t.Fatalf("log %q, want %q", log, want)
	}
}
