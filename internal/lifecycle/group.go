package lifecycle

import (
	"context"
	"errors"
	"fmt"
)

// Member is a part of a Group, with the name the group's errors give it.
type Member struct {
	Name string
	Part Part
}

// Group is a part made of members, the way every process runs its parts: Start starts
// them in order, each once the one before has started, and when one stops by itself
// (its Wait returns), or the group is asked to stop (Close, the end of Start's ctx), it
// closes the others in reverse order. A program that runs its parts in a group exits
// when one of them is gone, and its platform (Cloud Foundry) restarts it, instead of
// running on without it.
//
// Members are started with the values of Start's ctx but not its end: when ctx ends the
// group closes them itself, in reverse order, each with its grace. A Close during Start
// takes effect once the member starting then has started.
//
// Wait reports nil when the group was asked to stop and every member stopped cleanly;
// otherwise the member that stopped first and why (wrapping ErrStoppedByItself), a
// member that failed to start, and what went wrong stopping the others, each with its
// member's name.
type Group struct {
	members []Member
	life    State
}

var _ Part = (*Group)(nil)

// NewGroup returns a group of members, to start in the order given; it does not start
// them.
func NewGroup(members ...Member) *Group { return &Group{members: members} }

// ErrStoppedByItself is what a Group's Wait reports (wrapped, with the member's name
// and reason) for a member that stopped while it was to keep running.
var ErrStoppedByItself = errors.New("stopped by itself")

// Start starts the members in order. When one fails to start, or the group is asked to
// stop during Start, it closes those started in reverse order and returns why, naming
// the member.
func (g *Group) Start(ctx context.Context) error {
	if err := g.life.Begin(); err != nil {
		return fmt.Errorf("group: %w", err)
	}
	if err := g.check(); err != nil {
		g.life.Stopped(err)
		return err
	}
	life := context.WithoutCancel(ctx)
	stopping := g.life.Stopping()
	for i, m := range g.members {
		select {
		case <-stopping:
			g.life.Stopped(closeReverse(g.members[:i], ""))
			return fmt.Errorf("group: %w before starting %s", ErrClosed, m.Name)
		case <-ctx.Done():
			g.life.Stopped(closeReverse(g.members[:i], ""))
			return fmt.Errorf("group: %w before starting %s", ctx.Err(), m.Name)
		default:
		}
		if err := m.Part.Start(life); err != nil {
			err = fmt.Errorf("start %s: %w", m.Name, err)
			g.life.Stopped(errors.Join(err, closeReverse(g.members[:i], "")))
			return err
		}
	}
	go g.supervise(ctx, stopping)
	return nil
}

// supervise waits for the first member to stop by itself, Close or the end of ctx, and
// then closes the members in reverse order.
func (g *Group) supervise(ctx context.Context, stopping <-chan struct{}) {
	type exit struct {
		name string
		err  error
	}
	exited := make(chan exit, len(g.members)) // every watcher ends once its member is closed
	for _, m := range g.members {
		go func() { exited <- exit{m.Name, m.Part.Wait()} }()
	}
	var first error
	var failed string
	select {
	case <-stopping:
	case <-ctx.Done():
	case e := <-exited:
		failed, first = e.name, fmt.Errorf("%s %w", e.name, ErrStoppedByItself)
		if e.err != nil {
			first = fmt.Errorf("%w: %w", first, e.err)
		}
	}
	g.life.Stopped(errors.Join(first, closeReverse(g.members, failed)))
}

// check refuses a member without a name or a part, and two of one name.
func (g *Group) check() error {
	seen := map[string]bool{}
	for i, m := range g.members {
		switch {
		case m.Name == "" || m.Part == nil:
			return fmt.Errorf("group: member %d (%q) has no name or no part", i, m.Name)
		case seen[m.Name]:
			return fmt.Errorf("group: two members are named %q", m.Name)
		}
		seen[m.Name] = true
	}
	return nil
}

// closeReverse closes members in reverse order and joins what went wrong, leaving out the
// member named skip, whose failure is reported already.
func closeReverse(members []Member, skip string) error {
	var errs []error
	for i := len(members) - 1; i >= 0; i-- {
		m := members[i]
		if err := m.Part.Close(); err != nil && m.Name != skip {
			errs = append(errs, fmt.Errorf("stop %s: %w", m.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Wait blocks until every member has stopped and returns why the group stopped (see
// Group).
func (g *Group) Wait() error { return g.life.Wait() }

// Close closes the members in reverse order and returns what Wait returns.
func (g *Group) Close() error { return g.life.Close() }

// Run is Start followed by Wait.
func (g *Group) Run(ctx context.Context) error { return Run(ctx, g) }

// Step is a member that is no long-running part: what a process does between its parts'
// starts (open a file, wire one part to another, pin CPUs) and its undoing. start runs
// at its turn, after the members before it have started; stop (nil: nothing to undo)
// runs when the step is closed or start's ctx ends, so in a Group after the members
// after it have stopped. A start that fails leaves nothing to undo. A step never stops
// by itself.
func Step(start func(ctx context.Context) error, stop func() error) Part {
	return &step{start: start, stop: stop}
}

type step struct {
	start func(context.Context) error
	stop  func() error
	life  State
}

var _ Part = (*step)(nil)

func (s *step) Start(ctx context.Context) error {
	if err := s.life.Begin(); err != nil {
		return fmt.Errorf("step: %w", err)
	}
	if s.start != nil {
		if err := s.start(ctx); err != nil {
			s.life.Stopped(err)
			return err
		}
	}
	stopping := s.life.Stopping()
	go func() {
		select {
		case <-stopping:
		case <-ctx.Done():
		}
		var err error
		if s.stop != nil {
			err = s.stop()
		}
		s.life.Stopped(err)
	}()
	return nil
}

func (s *step) Wait() error                   { return s.life.Wait() }
func (s *step) Close() error                  { return s.life.Close() }
func (s *step) Run(ctx context.Context) error { return Run(ctx, s) }

// Later is a part made when it starts: Start calls make and starts the part it returns,
// whose Wait and Close are Later's from then on. In a Group it is the member whose
// configuration comes from the members started before it (a port they chose, what
// they found). make's error is Start's.
func Later(make func() (Part, error)) Part { return &later{make: make} }

type later struct {
	make func() (Part, error)
	life State
}

var _ Part = (*later)(nil)

func (l *later) Start(ctx context.Context) error {
	if err := l.life.Begin(); err != nil {
		return fmt.Errorf("later: %w", err)
	}
	p, err := l.make()
	if err == nil && p == nil {
		err = errors.New("later: made no part")
	}
	if err == nil {
		err = p.Start(ctx)
	}
	if err != nil {
		l.life.Stopped(err)
		return err
	}
	stopping := l.life.Stopping()
	go func() {
		waited := make(chan error, 1)
		go func() { waited <- p.Wait() }()
		select {
		case err := <-waited:
			l.life.Stopped(err)
		case <-stopping:
			l.life.Stopped(p.Close())
		}
	}()
	return nil
}

func (l *later) Wait() error                   { return l.life.Wait() }
func (l *later) Close() error                  { return l.life.Close() }
func (l *later) Run(ctx context.Context) error { return Run(ctx, l) }
