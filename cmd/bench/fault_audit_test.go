package main

import (
	"context"
	"testing"
	"time"
)

// TestFaultCallsAudited: the fault scenario's calls, made through clients
// of their own (with and without retries), are registered with the
// auditor as every other toolbus call is. They went around it, so --fault
// --audit checked no call on the wire.
func TestFaultCallsAudited(t *testing.T) {
	e := auditedEnv(t, &config{sleep: time.Millisecond, faultEvery: time.Second})
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
	e.audit.mu.Lock()
	audited := len(e.audit.calls)
	e.audit.mu.Unlock()
	if calls == 0 || audited != calls {
		t.Errorf("%d of the fault scenario's %d calls registered with the auditor", audited, calls)
	}
}
