package main

import (
	"strings"
	"syscall"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
)

// fullWriter fails every write, as stdout on a full disk (/dev/full) does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestOutputLostFails: a command whose output could not be written (a
// full disk, an I/O error) exits 1 saying so. It exited 0: `toolctl
// state export --session S > backup.json` on a full disk left an empty
// backup, and a call's output was lost, with success.
func TestOutputLostFails(t *testing.T) {
	url := groupsFleet(t)
	if code, _, errs := toolctl(t, "--nats", url, "groups", "set", "--session", "s0", "web"); code != exitOK {
		t.Fatalf("groups set: exit %d: %s", code, errs)
	}
	for _, args := range [][]string{
		{"version"},
		{"--nats", url, "state", "export", "--session", "s0"},
		{"--nats", url, "call", "--session", "s0", "search"},
		{"--nats", url, "tools"},
	} {
		var errb strings.Builder
		code := run(natstest.Ctx(t), args, strings.NewReader(""), fullWriter{}, &errb)
		if code != exitError || !strings.Contains(errb.String(), "writing the output") || !strings.Contains(errb.String(), syscall.ENOSPC.Error()) {
			t.Errorf("toolctl %s to a full stdout: exit %d, stderr %q; want exit %d saying the output was not written", strings.Join(args, " "), code, errb.String(), exitError)
		}
	}
	// Written output still succeeds.
	var out, errb strings.Builder
	if code := run(natstest.Ctx(t), []string{"--nats", url, "call", "--session", "s0", "search"}, strings.NewReader(""), &out, &errb); code != exitOK || out.String() != "found\n" {
		t.Errorf("control: call search: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
