package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolbus/toolbus/toolkit"
)

// TestUsage: the command list is one aligned column of synopses, with a
// line for each mcp mode; commands that never connect do not list the
// connection flags.
func TestUsage(t *testing.T) {
	code, _, errs := toolctl(t, "-h")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	list := errs[strings.Index(errs, "Commands:\n")+len("Commands:\n"):]
	list = list[:strings.Index(list, "\n\n")]
	col := -1
	for _, line := range strings.Split(list, "\n") {
		i := regexp.MustCompile(`\S  +\S`).FindStringIndex(line)
		if i == nil {
			t.Errorf("no summary on %q", line)
			continue
		}
		if at := utf8.RuneCountInString(line[:i[1]-1]); col == -1 {
			col = at
		} else if at != col {
			t.Errorf("summary at column %d, not %d: %q", at, col, line)
		}
	}
	// A durable call's final is kept as a --keep call's is.
	for _, want := range []string{"\n  mcp serve", "\n  mcp stdio", "\n  mcp login SERVER", "\n  mcp logout SERVER", "call --keep or --durable"} {
		if !strings.Contains(errs, want) {
			t.Errorf("usage lacks %q:\n%s", want, errs)
		}
	}

	for _, tt := range []struct {
		cmd  string
		conn bool
	}{{"auth", false}, {"version", false}, {"call", true}} {
		_, _, errs := toolctl(t, tt.cmd, "-h")
		if got := strings.Contains(errs, "-nats"); got != tt.conn {
			t.Errorf("toolctl %s -h lists the connection flags: %v, want %v\n%s", tt.cmd, got, tt.conn, errs)
		}
	}
}

// TestTopPlain: top writing to a file or pipe prints its tables one after
// the other, apart, without the escapes that redraw a terminal.
func TestTopPlain(t *testing.T) {
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct{}) (string, error) { return "hi", nil })); err != nil {
		t.Fatal(err)
	}
	url := topFleet(t, tk)
	ctx, cancel := context.WithCancel(context.Background())
	defer time.AfterFunc(1100*time.Millisecond, cancel).Stop()
	var out, errs strings.Builder
	if code := run(ctx, []string{"--nats", url, "top", "--interval", "200ms"}, strings.NewReader(""), &out, &errs); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	if strings.Contains(out.String(), "\033") {
		t.Errorf("terminal escapes in %q", out.String())
	}
	if n := strings.Count(out.String(), "\n\n1 worker, rates over"); n < 1 {
		t.Errorf("tables not apart:\n%s", out.String())
	}
}

// TestStateUsage: state without its subcommand or its session says which
// of the two is missing, not only the synopsis.
func TestStateUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"state"}, "state takes a subcommand, export or import"},
		{[]string{"state", "--session", "s1"}, "state takes a subcommand, export or import"},
		{[]string{"state", "export"}, "state export needs --session"},
		{[]string{"state", "import", "s1.json"}, "state import needs --session"},
	} {
		code, _, errs := toolctl(t, tt.args...)
		if code != exitUsage || !strings.Contains(errs, tt.want) || !strings.Contains(errs, "toolctl state export --session S") {
			t.Errorf("toolctl %s: exit %d:\n%s", strings.Join(tt.args, " "), code, errs)
		}
	}
}

// TestHelpCommand: `toolctl help call` shows call's usage, as `toolctl
// call -h` does, and `toolctl help bogus` is bad usage; both printed the
// general help and exited 0.
func TestHelpCommand(t *testing.T) {
	code, out, errs := toolctl(t, "help", "call")
	if code != exitOK || !strings.Contains(out+errs, "Usage: toolctl call NAME") {
		t.Errorf("toolctl help call: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = toolctl(t, "help", "bogus")
	if code != exitUsage || !strings.Contains(errs, `unknown command "bogus"`) {
		t.Errorf("toolctl help bogus: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := toolctl(t, "help"); code != exitOK || !strings.Contains(out, "Commands:") {
		t.Errorf("toolctl help: exit %d\n%s", code, out)
	}
}

// TestHelpOneStream: `toolctl help` prints the whole usage, connection
// flags included, on stdout and in order, so `toolctl help | less` shows
// all of it.
func TestHelpOneStream(t *testing.T) {
	code, out, errs := toolctl(t, "help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if errs != "" {
		t.Errorf("toolctl help wrote to stderr:\n%s", errs)
	}
	flags, exits := strings.Index(out, "-nats URL"), strings.Index(out, "Exit codes:")
	if flags < 0 || exits < 0 || flags > exits {
		t.Errorf("toolctl help's stdout lacks the connection flags before the exit codes:\n%s", out)
	}
}

// TestHelpCommandStdout: `toolctl help COMMAND` prints that command's
// usage on stdout, as `toolctl help` does; an unknown command is still an
// error on stderr.
func TestHelpCommandStdout(t *testing.T) {
	code, out, errs := toolctl(t, "help", "call")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out, "Usage: toolctl call") || !strings.Contains(out, "-timeout") || errs != "" {
		t.Errorf("toolctl help call: stdout\n%s\nstderr\n%s", out, errs)
	}
	code, out, errs = toolctl(t, "help", "nosuch")
	if code != exitUsage || out != "" || !strings.Contains(errs, `unknown command "nosuch"`) {
		t.Errorf("toolctl help nosuch: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestUnknownCommandNearest: a misspelt command ("tool", "cal") was
// refused with "see toolctl -h" alone; it now names the command of the
// nearest name, as an unknown flag and an unknown tool name theirs.
func TestUnknownCommandNearest(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"tool"}, `unknown command "tool": did you mean tools? (see toolctl -h)`},
		{[]string{"cal", "echo"}, `unknown command "cal": did you mean call? (see toolctl -h)`},
		{[]string{"approv", "c1"}, `unknown command "approv": did you mean approve? (see toolctl -h)`},
		{[]string{"Sesions"}, `unknown command "Sesions": did you mean sessions? (see toolctl -h)`},
		{[]string{"help", "cal"}, `unknown command "cal": did you mean call? (see toolctl -h)`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" (see toolctl -h)`},
	} {
		code, _, errs := toolctl(t, tt.args...)
		if code != exitUsage || !strings.Contains(errs, tt.want) {
			t.Errorf("toolctl %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tt.args, " "), code, errs, exitUsage, tt.want)
		}
	}
}
