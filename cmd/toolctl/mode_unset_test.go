package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/permission"
)

// TestModeUnset: a session's mode, once set, can be unset again
// (--unset), so that each worker's default mode applies to it as before;
// its rules stay. Without it, `mode default` was the nearest, which pins
// the session to "default" whatever the workers' permissions.mode says.
func TestModeUnset(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	if _, err := permission.NewKVStore(ctx, natstest.JS(t, natstest.Connect(t, s)), nil); err != nil { // as a worker makes the buckets
		t.Fatal(err)
	}
	toolctl := func(args ...string) (string, string, int) {
		var so, se bytes.Buffer
		code := run(ctx, append([]string{"--nats", s.ClientURL()}, args...), nil, &so, &se)
		return so.String(), se.String(), code
	}
	for _, args := range [][]string{
		{"mode", "--session", "s1", "explore"},
		{"allow", "--session", "s1", "echo"},
	} {
		if out, se, code := toolctl(args...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, se)
		}
	}
	out, se, code := toolctl("mode", "--session", "s1", "--unset")
	if code != exitOK || !strings.Contains(out, "session s1: mode not set") || !strings.Contains(out, "allow echo") {
		t.Fatalf("mode --unset: exit %d\n%s%s", code, out, se)
	}
	if _, se, code := toolctl("mode", "--session", "s1", "--unset", "explore"); code != exitUsage || !strings.Contains(se, "--unset") {
		t.Fatalf("mode --unset with a mode: exit %d\n%s", code, se)
	}
}
