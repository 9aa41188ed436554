package lifecycle_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle"
	"github.com/cf-benchmark/cf-benchmark/internal/lifecycle/lifecycletest"
)

// journal records what the members of a group were asked to do, in order.
type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) add(e string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, e)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.entries)
}

// recorded is a loop that writes its Start (when it begins and when it returns) and its
// Close to a journal; startErr makes its Start fail, onStart runs inside its Start.
type recorded struct {
	*loop
	name     string
	j        *journal
	startErr error
	onStart  func()
}

func (r *recorded) Start(ctx context.Context) error {
	r.j.add("start " + r.name)
	defer r.j.add("started " + r.name)
	if r.onStart != nil {
		r.onStart()
	}
	if r.startErr != nil {
		return r.startErr
	}
	return r.loop.Start(ctx)
}

func (r *recorded) Close() error {
	r.j.add("close " + r.name)
	return r.loop.Close()
}

// members returns recorded members named names, all on journal j.
func members(j *journal, names ...string) (map[string]*recorded, []lifecycle.Member) {
	parts := map[string]*recorded{}
	var ms []lifecycle.Member
	for _, n := range names {
		parts[n] = &recorded{loop: &loop{fail: make(chan error, 1)}, name: n, j: j}
		ms = append(ms, lifecycle.Member{Name: n, Part: parts[n]})
	}
	return parts, ms
}

// waited returns what p's Wait returns, failing the test when it has not returned
// within lifecycletest.Guard.
func waited(t *testing.T, p lifecycle.Part) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- p.Wait() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(lifecycletest.Guard):
		t.Fatalf("Wait did not return within %s", lifecycletest.Guard)
		return nil
	}
}

func TestGroupConforms(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		parts, ms := members(&journal{}, "db", "server")
		return lifecycletest.Subject{Part: lifecycle.NewGroup(ms...), Fail: func(*testing.T) { parts["server"].fail <- errors.New("listener died") }}
	})
}

func TestStepConforms(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		return lifecycletest.Subject{Part: lifecycle.Step(func(context.Context) error { return nil }, func() error { return nil }),
			NoFailure: "a step never stops by itself"}
	})
}

func TestLaterConforms(t *testing.T) {
	lifecycletest.Run(t, func(t *testing.T) lifecycletest.Subject {
		l := &loop{fail: make(chan error, 1)}
		return lifecycletest.Subject{Part: lifecycle.Later(func() (lifecycle.Part, error) { return l, nil }),
			Fail: func(*testing.T) { l.fail <- errors.New("broken") }}
	})
}

// TestGroupStartsInOrderAndClosesInReverse: each member's Start returns before the next
// one's begins, and Close closes them last first.
func TestGroupStartsInOrderAndClosesInReverse(t *testing.T) {
	j := &journal{}
	_, ms := members(j, "a", "b", "c")
	g := lifecycle.NewGroup(ms...)
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("Close: %v, want nil", err)
	}
	want := []string{"start a", "started a", "start b", "started b", "start c", "started c", "close c", "close b", "close a"}
	if got := j.list(); !slices.Equal(got, want) {
		t.Fatalf("journal %q, want %q", got, want)
	}
}

// TestGroupEndOfContextClosesInReverse: the end of Start's ctx closes the members in
// reverse order, as Close does, and Wait reports that they stopped cleanly.
func TestGroupEndOfContextClosesInReverse(t *testing.T) {
	j := &journal{}
	_, ms := members(j, "a", "b")
	g := lifecycle.NewGroup(ms...)
	ctx, cancel := context.WithCancel(context.Background())
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := waited(t, g); err != nil {
		t.Fatalf("Wait: %v, want nil", err)
	}
	if got, want := j.list()[4:], []string{"close b", "close a"}; !slices.Equal(got, want) {
		t.Fatalf("closed %q, want %q", got, want)
	}
}

// TestGroupStopsWhenAMemberDies: a member that stops by itself stops the group; the
// others are closed in reverse order, and Wait names the member and says why.
func TestGroupStopsWhenAMemberDies(t *testing.T) {
	j := &journal{}
	parts, ms := members(j, "a", "b", "c")
	g := lifecycle.NewGroup(ms...)
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	died := errors.New("accept: use of closed network connection")
	parts["b"].fail <- died
	err := waited(t, g)
	if !errors.Is(err, lifecycle.ErrStoppedByItself) || !errors.Is(err, died) || !strings.HasPrefix(err.Error(), "b stopped by itself: accept") {
		t.Fatalf("Wait: %v, want b stopped by itself and why", err)
	}
	if got, want := j.list()[6:], []string{"close c", "close b", "close a"}; !slices.Equal(got, want) {
		t.Fatalf("closed %q, want %q", got, want)
	}
	if err := parts["a"].Wait(); err != nil {
		t.Fatalf("a, closed by the group: %v, want nil", err)
	}
}

// TestGroupFailedStartStopsThoseStarted: a member that fails to start ends Start with
// its name and error; those started before are closed in reverse order, and those after
// it are never started.
func TestGroupFailedStartStopsThoseStarted(t *testing.T) {
	j := &journal{}
	parts, ms := members(j, "a", "b", "c", "d")
	taken := errors.New("listen: address already in use")
	parts["c"].startErr = taken
	g := lifecycle.NewGroup(ms...)
	err := g.Start(t.Context())
	if !errors.Is(err, taken) || !strings.HasPrefix(err.Error(), "start c: ") {
		t.Fatalf("Start: %v, want start c and why", err)
	}
	if werr := g.Wait(); !errors.Is(werr, taken) {
		t.Fatalf("Wait after a failed Start: %v, want %v", werr, taken)
	}
	want := []string{"start a", "started a", "start b", "started b", "start c", "started c", "close b", "close a"}
	if got := j.list(); !slices.Equal(got, want) {
		t.Fatalf("journal %q, want %q", got, want)
	}
}

// TestGroupReportsWhatFailsToStop: what a member returns from Close is in Wait, with its
// name.
func TestGroupReportsWhatFailsToStop(t *testing.T) {
	flush := errors.New("flush: database away")
	g := lifecycle.NewGroup(
		lifecycle.Member{Name: "writer", Part: lifecycle.Step(nil, func() error { return flush })},
		lifecycle.Member{Name: "server", Part: lifecycle.Step(nil, nil)},
	)
	if err := g.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); !errors.Is(err, flush) || !strings.Contains(err.Error(), "stop writer: flush") {
		t.Fatalf("Close: %v, want stop writer and why", err)
	}
}

// TestGroupEndOfContextDuringStart: a context that ends while a member starts stops the
// group before the next member starts.
func TestGroupEndOfContextDuringStart(t *testing.T) {
	j := &journal{}
	parts, ms := members(j, "a", "b", "c")
	ctx, cancel := context.WithCancel(context.Background())
	parts["b"].onStart = cancel
	g := lifecycle.NewGroup(ms...)
	if err := g.Start(ctx); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "before starting c") {
		t.Fatalf("Start: %v, want context canceled before starting c", err)
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("Wait: %v, want nil", err)
	}
	want := []string{"start a", "started a", "start b", "started b", "close b", "close a"}
	if got := j.list(); !slices.Equal(got, want) {
		t.Fatalf("journal %q, want %q", got, want)
	}
}

// TestGroupRefusesBadMembers: a member without a name or a part, or two of one name,
// fail Start with a clear error before anything starts.
func TestGroupRefusesBadMembers(t *testing.T) {
	step := func() lifecycle.Part { return lifecycle.Step(nil, nil) }
	for name, c := range map[string]struct {
		members []lifecycle.Member
		want    string
	}{
		"no name":  {[]lifecycle.Member{{Name: "a", Part: step()}, {Part: step()}}, `member 1 ("") has no name or no part`},
		"no part":  {[]lifecycle.Member{{Name: "a"}}, `member 0 ("a") has no name or no part`},
		"one name": {[]lifecycle.Member{{Name: "a", Part: step()}, {Name: "a", Part: step()}}, `two members are named "a"`},
	} {
		t.Run(name, func(t *testing.T) {
			g := lifecycle.NewGroup(c.members...)
			if err := g.Start(t.Context()); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Start: %v, want %q", err, c.want)
			}
		})
	}
}

// TestStepUndoesOnClose: a step's stop runs once, on Close, and a failed start leaves
// nothing to undo.
func TestStepUndoesOnClose(t *testing.T) {
	stops := 0
	s := lifecycle.Step(func(context.Context) error { return nil }, func() error { stops++; return nil })
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
	if stops != 1 {
		t.Fatalf("stop ran %d times, want once", stops)
	}
	failed := lifecycle.Step(func(context.Context) error { return errors.New("open: no such file") }, func() error { stops++; return nil })
	if err := failed.Start(t.Context()); err == nil {
		t.Fatal("Start of a step whose start fails: nil")
	}
	failed.Close()
	if stops != 1 {
		t.Fatal("stop ran after a failed start")
	}
}

// TestLaterMakesAtStart: Later makes its part only when it starts, and make's failure
// is Start's.
func TestLaterMakesAtStart(t *testing.T) {
	made := false
	l := lifecycle.Later(func() (lifecycle.Part, error) { made = true; return &loop{fail: make(chan error, 1)}, nil })
	if made {
		t.Fatal("made before Start")
	}
	if err := l.Start(t.Context()); err != nil || !made {
		t.Fatalf("Start: %v, made %v", err, made)
	}
	l.Close()
	bad := errors.New("config: no port")
	if err := lifecycle.Later(func() (lifecycle.Part, error) { return nil, bad }).Start(t.Context()); !errors.Is(err, bad) {
		t.Fatalf("Start with a make that fails: %v, want %v", err, bad)
	}
}
