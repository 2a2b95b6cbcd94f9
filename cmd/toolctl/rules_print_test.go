package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"unicode"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/permission"
)

// TestRulesPrintedWithoutControls: a session's rule may hold anything a
// command held (a suggested rule is made from the caller's command, and
// the operator pastes it), terminal controls included; `toolctl mode`
// and `toolctl allow` print such a rule quoted, so it cannot drive the
// operator's terminal.
func TestRulesPrintedWithoutControls(t *testing.T) {
	s := natstest.Embedded(t, true)
	ctx := natstest.Ctx(t)
	js := natstest.JS(t, natstest.Connect(t, s))
	st, err := permission.NewKVStore(ctx, js, nil) // the worker's mount
	if err != nil {
		t.Fatal(err)
	}
	g, err := permission.NewGuard(st, &permission.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	const evil = "execute_shell_command:\x1b]0;owned\x07\x1b[2Jgit push:*"
	if err := g.Allow(ctx, "s1", evil); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--nats", s.ClientURL(), "mode", "--session", "s1"},
		{"--nats", s.ClientURL(), "allow", "--session", "s2", evil},
	} {
		var so, se bytes.Buffer
		if code := run(ctx, args, nil, &so, &se); code != exitOK {
			t.Fatalf("toolctl %s: exit %d\n%s%s", strings.Join(args[2:], " "), code, so.String(), se.String())
		}
		if i := strings.IndexFunc(so.String(), func(r rune) bool { return r != '\n' && !unicode.IsPrint(r) }); i >= 0 {
			t.Errorf("toolctl %q printed a control character: %q", args[2:], so.String())
		}
		if !strings.Contains(so.String(), "git push:*") {
			t.Errorf("toolctl %q did not print the rule: %q", args[2:], so.String())
		}
	}
}
