package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/permission"
	"github.com/toolbus/toolbus/toolkit"
)

// TestApprovalHintQuotes: the hint an approval_required call prints is a
// command to paste into a shell, made of the session name and the
// suggested rules, which come from the caller's input: they are quoted,
// so pasting it runs toolctl allow and nothing else, and carry no
// terminal control characters.
func TestApprovalHintQuotes(t *testing.T) {
	var stderr bytes.Buffer
	e := &env{stderr: &stderr, cfg: &config.Config{}}
	final := &toolkit.Response{Metadata: map[string]any{
		permission.MetaApprovalKey:    "c1",
		permission.MetaSuggestedRules: []string{"execute_shell_command:a'; touch /tmp/pwn; echo ' x:*"},
	}}
	approvalHint(e, "s; touch /tmp/pwn2\x1b]0;t\x07", final)
	out := stderr.String()
	for _, want := range []string{
		`--session $'s; touch /tmp/pwn2\x1b]0;t\x07'`,
		`'execute_shell_command:a'\''; touch /tmp/pwn; echo '\'' x:*'`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("hint %q lacks %q", out, want)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("hint %q carries control characters", out)
	}
	for in, want := range map[string]string{
		"plain-1":   "plain-1",
		"a b":       "'a b'",
		"it's":      `'it'\''s'`,
		"x\u202ey":  `$'x\u202ey'`,
		"q'\\\x01":  `$'q\'\\\x01'`,
		"":          "''",
		"$(id)`id`": "'$(id)`id`'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestScopeNamePrintable: session names are the callers' and are printed
// to the operator (toolctl approve): without their control characters.
func TestScopeNamePrintable(t *testing.T) {
	got := scopeName(toolkit.SessionScope("alice", "s\x1b[2K\u202e"))
	if strings.ContainsAny(got, "\x1b\u202e") || !strings.HasPrefix(got, "alice/") {
		t.Errorf("scopeName = %q", got)
	}
}

// TestPrintableInput: the input toolctl approve prints is the caller's
// (canonical JSON, which escapes only C0 controls): C1 controls such as
// CSI (U+009B), DEL and bidi overrides are printed escaped, and the JSON
// stays the same JSON.
func TestPrintableInput(t *testing.T) {
	in := `{"command":"echo \u009b2J\u007f\u202egnp.x","é":"ok"}`
	got := printableJSON(in)
	if strings.ContainsAny(got, "\u009b\u007f\u202e") {
		t.Fatalf("printableJSON(%q) = %q", in, got)
	}
	var a, b any
	if err := json.Unmarshal([]byte(in), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(got), &b); err != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("printableJSON(%q) = %q: another value (%v)", in, got, err)
	}
}
