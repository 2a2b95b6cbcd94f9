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
