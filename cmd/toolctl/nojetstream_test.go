package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// noJetStreamFleet is a core-NATS server (no JetStream) on a loopback
// port and a worker with in-memory group state (`worker --group-state
// memory`: "no JetStream needed") serving echo in basic and search in
// the web group, active by default.
func noJetStreamFleet(t *testing.T) string {
	t.Helper()
	s := natstest.ServerWith(t, func(o *server.Options) {
		o.DontListen, o.Host, o.Port, o.JetStream = false, "127.0.0.1", -1, false
	})
	tk := toolkit.New(&toolkit.Options{State: toolkit.NewMemoryState()})
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web access.", Instructions: "Cite sources.", Active: true}); err != nil {
		t.Fatal(err)
	}
	echo := toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct{}) (string, error) { return "hi", nil })
	search := toolkit.Func("search", "Search.", func(ctx context.Context, in struct{}) (string, error) { return "found", nil })
	if err := tk.Add(echo); err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(search, toolkit.InGroup("web")); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(natstest.Conn(t, s), tk, &bus.WorkerOptions{Instance: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return s.ClientURL()
}

// On a fleet without JetStream (workers with --group-state memory) no
// session has stored state in the fleet's bucket: subjects.md says "while
// the bucket does not exist no session has stored state and the groups
// announced active apply". tools --session, groups --session and
// instructions fail instead, on the missing JetStream API.
func TestFleetCommandsWithoutJetStream(t *testing.T) {
	url := noJetStreamFleet(t)
	if code, out, errs := toolctl(t, "--nats", url, "tools"); code != exitOK || !strings.Contains(out, "search") {
		t.Fatalf("control: tools: exit %d\n%s%s", code, out, errs)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tools", "--session", "s1"}, "search"},
		{[]string{"groups", "--session", "s1"}, "web"},
		{[]string{"instructions"}, "Cite sources."},
	} {
		code, out, errs := toolctl(t, append([]string{"--nats", url}, tc.args...)...)
		if code != exitOK || !strings.Contains(out, tc.want) {
			t.Errorf("toolctl %s: exit %d, stdout %q, stderr %q; want the announced defaults (%q)", strings.Join(tc.args, " "), code, out, errs, tc.want)
		}
	}
}

// `call --durable` on a server without JetStream: the client takes 30 s
// to say the stream "did not take the call (no stream leader)", while
// there is no JetStream at all (the JetStream API has no responders).
func TestDurableWithoutJetStream(t *testing.T) {
	url := noJetStreamFleet(t)
	start := time.Now()
	code, out, errs := toolctl(t, "--nats", url, "call", "--durable", "echo")
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("call --durable without JetStream: exit %d after %v: %s%s", code, took.Round(time.Millisecond), out, errs)
	}
}
