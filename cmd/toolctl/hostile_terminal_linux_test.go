package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolbus/toolbus/bus/wire"
)

// TestCallOutputOnTerminal: a worker's text that drives a terminal
// (screen clear, OSC 52 clipboard write, OSC 8 link, carriage return
// overwrite, bidi override) reaches a terminal escaped and a pipe exact,
// also when a character is cut between two chunks: the printer escaped
// each chunk's text alone, so a bidi override or a C1 CSI whose bytes
// came in two chunks (each an invalid piece that printed as it was) was
// whole again on the terminal, as was a lone byte that is no character.
func TestCallOutputOnTerminal(t *testing.T) {
	pieces := []string{"a\x1b[2J\x1b]52;c;b3duZWQ=\a\x1b]8;;https://x/\aok\x1b]8;;\a\rfake\u202eb\xe2\x80", "\xaec\xc2", "\x9b31m \x9b d\xe2"}
	url := hostileWorker(t, "leak", func(id string) []*wire.Frame { return textChunks(id, pieces...) })
	code, out, errs := toolctlOnTerminal(t, "--nats", url, "call", "leak")
	if code != exitOK || !strings.Contains(out, "fake") {
		t.Fatalf("call on a terminal: exit %d\nstdout %q\nstderr %s", code, out, errs)
	}
	if r, bad := unprintable(out); bad || !utf8.ValidString(out) {
		t.Errorf("the terminal got %q (valid UTF-8: %v): %q", r, utf8.ValidString(out), out)
	}
	code, out, errs = toolctl(t, "--nats", url, "call", "leak")
	if want := strings.Join(pieces, "") + "\n"; code != exitOK || out != want {
		t.Errorf("call to a pipe: exit %d, printed %q, want %q\n%s", code, out, want, errs)
	}
}
