package discovery

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestConcurrentDiscoverShared: Discover calls made while a discovery is
// in flight share the next one, so a fleet holds the answers of one
// discovery at a time (up to the fleet's bounds) however many callers
// ask at once. Each sent its own request and held its own answers until
// its window ended.
func TestConcurrentDiscoverShared(t *testing.T) {
	s := natstest.Server(t)
	// Nobody listens yet: NewFleet's discovery ends at once.
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{DiscoverWindow: time.Hour})
	// A listener that never answers: each discovery now lasts its window.
	listener := natstest.Conn(t, s)
	requests, err := listener.SubscribeSync(wire.SubjectDiscover)
	if err != nil {
		t.Fatal(err)
	}
	listener.Flush()
	count := func() int {
		t.Helper()
		if err := f.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := listener.Flush(); err != nil {
			t.Fatal(err)
		}
		n, _, err := requests.Pending()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ctx, cancel := context.WithCancel(natstest.Ctx(t))
	first := make(chan error, 1)
	go func() { first <- f.Discover(ctx) }()
	natstest.WaitFor(t, "the first discover request", func() bool { return count() >= 1 })
	const callers = 8
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.Discover(ctx)
		}()
	}
	// Each call returns once ctx ends; one made after that returns at once.
	cancel()
	wg.Wait()
	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("the first Discover returned %v, want context.Canceled", err)
	}
	if n := count(); n != 1 {
		t.Errorf("%d discover requests sent while one discovery was in flight, want 1 (the others share the next)", n)
	}
}

// TestDiscoverDuringDiscoveryAsksAgain: a Discover call made while a
// discovery is under way does not end with it: it waits for the next,
// whose request is sent after the call, so it sees every instance live
// when it was made.
func TestDiscoverDuringDiscoveryAsksAgain(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{DiscoverWindow: 300 * time.Millisecond})
	listener := natstest.Conn(t, s)
	requests, err := listener.SubscribeSync(wire.SubjectDiscover)
	if err != nil {
		t.Fatal(err)
	}
	listener.Flush()
	first := make(chan error, 1)
	go func() { first <- f.Discover(natstest.Ctx(t)) }()
	if _, err := requests.NextMsg(natstest.Guard); err != nil {
		t.Fatalf("the first discover request: %v", err)
	}
	if err := f.Discover(natstest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// The second call's request was sent before it returned.
	if err := f.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	listener.Flush()
	if n, _, _ := requests.Pending(); n != 1 {
		t.Errorf("%d discover requests after the first, want 1: the call made during the first discovery ended with it", n)
	}
}
