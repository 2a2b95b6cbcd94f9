package main

import (
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// On a fleet with no group besides basic and no skill, groups, skills and
// instructions say so on stderr and print nothing on stdout (for
// scripts), as pending and sessions do. skills printed only its table's
// header and instructions nothing at all, so an operator could not tell
// an empty answer from a broken one.
func TestEmptyFleetSaysSo(t *testing.T) {
	url := echoFleet(t)

	for _, c := range []struct {
		args []string
		want []string // in stderr
	}{
		{[]string{"groups"}, []string{"no tool groups"}},
		{[]string{"skills"}, []string{"no skills", "skills directories"}},
		{[]string{"instructions"}, []string{"nothing", "default session"}},
		{[]string{"instructions", "--session", "s1"}, []string{"nothing", `"s1"`}},
	} {
		code, out, errs := toolctl(t, append([]string{"--nats", url}, c.args...)...)
		what := "toolctl " + strings.Join(c.args, " ")
		if code != exitOK {
			t.Errorf("%s: exit %d, want %d: %s", what, code, exitOK, errs)
		}
		if out != "" {
			t.Errorf("%s: stdout %q, want nothing", what, out)
		}
		for _, want := range c.want {
			if !strings.Contains(errs, want) {
				t.Errorf("%s: stderr %q does not say %q", what, errs, want)
			}
		}
	}
}

// echoFleet starts an embedded server with one worker serving a tool
// echo and nothing else (no groups, no skills), and returns its URL.
func echoFleet(t *testing.T) string {
	t.Helper()
	s := natstest.Embedded(t, true)
	nc := natstest.Connect(t, s)
	tk := toolkit.New(nil)
	echo := toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct{}) (string, error) { return "", nil })
	if err := tk.Add(echo); err != nil {
		t.Fatal(err)
	}
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	return s.ClientURL()
}
