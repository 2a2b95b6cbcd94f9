package main

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/embedded"
)

// TestFaultCallsAudited: the fault scenario's calls, made through clients
// of their own (with and without retries), are registered with the
// auditor as every other toolbus call is. They went around it, so --fault
// --audit checked no call on the wire.
func TestFaultCallsAudited(t *testing.T) {
	s, err := embedded.Start(&embedded.Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	prefix := newInboxPrefix()
	caller, err := s.Connect(nats.CustomInboxPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(caller.Close)
	ac, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ac.Close)
	a, err := newAuditor(ac, prefix)
	if err != nil {
		t.Fatal(err)
	}
	client, err := bus.NewClient(caller, &bus.ClientOptions{StallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	e := &env{cfg: &config{sleep: time.Millisecond, faultEvery: time.Second}, caller: caller, client: client, fleet: &localFleet{}, audit: a}
	sc, err := buildScenario(context.Background(), e, "fault")
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, sr := range sc.series {
		if sr.system == sysDurable {
			continue // no calls stream here; the core ones show the path
		}
		// No worker serves sleep here: the call ends unavailable at once.
		sr.call(context.Background(), 0, 0)
		calls++
		if sr.close != nil {
			sr.close()
		}
	}
	a.mu.Lock()
	audited := len(a.calls)
	a.mu.Unlock()
	if calls == 0 || audited != calls {
		t.Errorf("%d of the fault scenario's %d calls registered with the auditor", audited, calls)
	}
}
