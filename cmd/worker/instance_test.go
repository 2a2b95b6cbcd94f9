package main_test

import (
	"strings"
	"syscall"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestDuplicateInstance: a worker refuses to start under the instance id
// of a live worker of the fleet (answers, pinned sessions and the fleet's
// view would mix the two up); a worker killed without a goodbye does not
// hold its id, so its replacement starts under it at once.
func TestDuplicateInstance(t *testing.T) {
	s := natstest.Embedded(t, true)
	url := s.ClientURL()
	first := startWorker(t, "--nats", url, "--instance", "twin")
	p := startProc(t, cleanEnv(t), workerBin, "--nats", url, "--instance", "twin")
	if code := p.exit(t); code != 1 || !strings.Contains(p.stderr.String(), "already has the instance id") {
		t.Fatalf("a second worker under a live worker's instance id: exit %d\n%s", code, p.stderr)
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.exit(t)
	startWorker(t, "--nats", url, "--instance", "twin")
}
