package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/permission"
)

// A rule `toolctl allow` added can be taken back (--remove): the session's
// rule is gone, the others stay; a rule the session does not have is said
// so, exit 1.
func TestAllowRemove(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	nc := natstest.Connect(t, s)
	st, err := permission.NewKVStore(ctx, natstest.JS(t, nc), nil)
	if err != nil {
		t.Fatal(err)
	}
	toolctl := func(args ...string) (string, string, int) {
		var so, se bytes.Buffer
		code := run(ctx, append([]string{"--nats", s.ClientURL()}, args...), nil, &so, &se)
		return so.String(), se.String(), code
	}
	if _, se, code := toolctl("allow", "--session", "s1", "write_text_file:*.txt", "echo"); code != exitOK {
		t.Fatalf("allow: exit %d: %s", code, se)
	}
	out, se, code := toolctl("allow", "--remove", "--session", "s1", "write_text_file:*.txt")
	if code != exitOK || !strings.Contains(out, "session s1: removed allow write_text_file:*.txt") {
		t.Fatalf("allow --remove: exit %d\n%s%s", code, out, se)
	}
	p, _, err := st.LoadSession(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) != 1 || p.Rules[0].Tool != "echo" {
		t.Fatalf("the session's rules after the removal: %+v, want echo's alone", p.Rules)
	}
	out, se, code = toolctl("allow", "--remove", "--session", "s1", "write_text_file:*.txt")
	if code != exitError || !strings.Contains(se, "session s1 has no rule allow write_text_file:*.txt") {
		t.Fatalf("allow --remove of a rule not there: exit %d, want 1 saying so\n%s%s", code, out, se)
	}
}

// Removing a rule a session does not have writes nothing: a session
// without a policy gets no empty one (it took a place in the bounded
// policy bucket, and a full bucket refused the removal with a storage
// error instead of saying there was no such rule).
func TestAllowRemoveNothingWritesNothing(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	nc := natstest.Connect(t, s)
	st, err := permission.NewKVStore(ctx, natstest.JS(t, nc), nil)
	if err != nil {
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	if code := run(ctx, []string{"--nats", s.ClientURL(), "allow", "--remove", "--session", "nosuch", "echo"}, nil, &so, &se); code != exitError || !strings.Contains(se.String(), "session nosuch has no rule allow echo") {
		t.Fatalf("allow --remove on a session without rules: exit %d\n%s%s", code, so.String(), se.String())
	}
	if _, found, err := st.LoadSession(ctx, "nosuch"); err != nil || found {
		t.Fatalf("after removing nothing, the session has a stored policy: %v %v", found, err)
	}
}
