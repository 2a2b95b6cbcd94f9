package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSessionsPrintsCallersSessionNamesQuoted: a session name is the
// caller's; one with terminal controls or a newline is printed quoted
// by toolctl sessions, so it cannot drive the operator's terminal or
// forge table rows. It was printed as it is.
func TestSessionsPrintsCallersSessionNamesQuoted(t *testing.T) {
	s := natstest.Embedded(t, true)
	nc := natstest.Connect(t, s)
	tk := toolkit.New(nil)
	touch := toolkit.Func("touch", "Keep state here.", func(context.Context, struct{}) (string, error) { return "ok", nil })
	if err := tk.Add(touch, toolkit.SessionBound()); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w1", Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, nc)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	c, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const evil = "x\x1b]0;pwned\x07\nfake\tw9\t1s\tweb\u202e\u009b"
	if r := c.Invoke(natstest.Ctx(t), toolkit.ToolCall{Name: "touch", Session: evil}); r.Text() != "ok" {
		t.Fatalf("touch: %+v", r)
	}
	code, out, errs := toolctl(t, "--nats", s.ClientURL(), "sessions")
	if code != exitOK {
		t.Fatalf("sessions: exit %d: %s", code, errs)
	}
	if strings.ContainsAny(out, "\x1b\x07\u202e") || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"x\x1b]0;pwned\a\nfake\tw9\t1s\tweb\u202e\u009b"`) {
		t.Fatalf("toolctl sessions printed the session name as it is:\n%q", out)
	}
	code, out, errs = toolctl(t, "--nats", s.ClientURL(), "sessions", "--json")
	var got []sessionJSON
	if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil || len(got) != 1 || got[0].Session != evil {
		t.Fatalf("sessions --json: exit %d (%v): %s%s", code, err, out, errs)
	}
	if strings.ContainsAny(out, "\x1b\x07\u202e\u009b") {
		t.Fatalf("toolctl sessions --json printed the session name as it is:\n%q", out)
	}
}

// TestSessionsPrintsWorkerPrintable: a session's pin is a worker's id as
// a worker wrote it in the sessions bucket; toolctl sessions printed it
// as it was, so a value with terminal controls drove the operator's
// terminal. A pin that is no instance id is left out now, so nothing of
// it is printed.
func TestSessionsPrintsWorkerPrintable(t *testing.T) {
	s := natstest.Embedded(t, true)
	nc := natstest.Connect(t, s)
	tk := toolkit.New(nil)
	touch := toolkit.Func("touch", "Keep state here.", func(context.Context, struct{}) (string, error) { return "ok", nil })
	if err := tk.Add(touch, toolkit.SessionBound()); err != nil {
		t.Fatal(err)
	}
	js := natstest.JS(t, nc)
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w1", Sessions: &bus.SessionsOptions{JetStream: js}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	c, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := natstest.Ctx(t)
	if r := c.Invoke(ctx, toolkit.ToolCall{Name: "touch", Session: "s1"}); r.Text() != "ok" {
		t.Fatalf("touch: %+v", r)
	}
	kv, err := js.KeyValue(ctx, wire.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(ctx)
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v: %v", keys, err)
	}
	if _, err := kv.Put(ctx, keys[0], []byte("w1\x1b]0;owned\a\u202e\u009b")); err != nil {
		t.Fatal(err)
	}
	// A pin that names no instance is no worker's (subjects.md: Session
	// affinity): left out, and its bytes never reach the terminal.
	code, out, errs := toolctl(t, "--nats", s.ClientURL(), "sessions")
	if code != exitOK || strings.Contains(out, "owned") || strings.Contains(errs, "owned") {
		t.Fatalf("sessions: exit %d\n%s%s", code, out, errs)
	}
	for _, r := range out + errs {
		if r != '\n' && !unicode.IsPrint(r) {
			t.Fatalf("toolctl sessions printed %q:\n%s", r, out)
		}
	}
}

// TestSessionsMarksGoneWorkers: a session stays pinned to a worker that
// has stopped until its next call moves it (README: session affinity);
// toolctl sessions listed such a pin like a live one. A pin whose worker
// no live worker of the fleet answers for is marked "(gone)" now, and
// worker_gone in JSON; a live worker's pin is not.
func TestSessionsMarksGoneWorkers(t *testing.T) {
	s := natstest.Embedded(t, true)
	serve := func(instance string) *bus.Worker {
		nc := natstest.Connect(t, s)
		tk := toolkit.New(nil)
		touch := toolkit.Func("touch", "Keep state here.", func(context.Context, struct{}) (string, error) { return "ok", nil })
		if err := tk.Add(touch, toolkit.SessionBound()); err != nil {
			t.Fatal(err)
		}
		w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: instance, Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, nc)}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Stop(context.Background()) })
		return w
	}
	c, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := natstest.Ctx(t)
	// s1 is pinned to w1, the only worker; w1 stops once w2 serves, and
	// s2 is pinned to w2.
	w1 := serve("w1")
	if r := c.Invoke(ctx, toolkit.ToolCall{Name: "touch", Session: "s1"}); r.Text() != "ok" {
		t.Fatalf("touch: %+v", r)
	}
	serve("w2")
	if err := w1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if r := c.Invoke(ctx, toolkit.ToolCall{Name: "touch", Session: "s2"}); r.Text() != "ok" {
		t.Fatalf("touch: %+v", r)
	}
	// --wait: the live worker's answer may come late on a loaded machine.
	code, out, errs := toolctl(t, "--nats", s.ClientURL(), "sessions", "--wait", "5s")
	rows := map[string]string{}
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 3 {
			rows[f[0]] = strings.Join(f[2:4], " ")
		}
	}
	if code != exitOK || !strings.HasPrefix(rows["s1"], "w1 (gone)") || strings.Contains(rows["s2"], "gone") || !strings.HasPrefix(rows["s2"], "w2") {
		t.Fatalf("sessions: exit %d, want s1 on w1 (gone), s2 on w2:\n%s%s", code, out, errs)
	}
	code, out, errs = toolctl(t, "--nats", s.ClientURL(), "sessions", "--wait", "5s", "--json")
	var got []sessionJSON
	if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil || len(got) != 2 {
		t.Fatalf("sessions --json: exit %d (%v): %s%s", code, err, out, errs)
	}
	for _, p := range got {
		if p.WorkerGone != (p.Worker == "w1") {
			t.Fatalf("sessions --json: %s on %s: worker_gone %v:\n%s", p.Session, p.Worker, p.WorkerGone, out)
		}
	}
}
