package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestCallAnswersElicitation: toolctl call --answer puts a tool's request
// for input to the person at the terminal (prompts on stderr, answers
// from stdin) and sends the answer back; an empty required answer
// declines; without --answer (and no terminal) the tool hears that
// toolctl cannot answer, and stderr says --answer gives one.
func TestCallAnswersElicitation(t *testing.T) {
	srv := natstest.Embedded(t, true)
	tk := greeter(t)
	w, err := bus.Serve(natstest.Connect(t, srv), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	call := func(stdin string, args ...string) (string, string) {
		return callWith(t, srv.ClientURL(), strings.NewReader(stdin), args...)
	}
	// age first (fields in name order), then a bad integer, then name.
	out, prompts := call("x\n7\nAda\n", "--answer", "greet")
	if strings.TrimSpace(out) != "accept Ada 7" || !strings.Contains(prompts, "the tool asks: Who are you?") || !strings.Contains(prompts, `"x" is not an integer`) {
		t.Fatalf("answered: %q\nprompts:\n%s", out, prompts)
	}
	if out, _ := call("\n\n", "--answer", "greet"); strings.TrimSpace(out) != "decline <nil> <nil>" {
		t.Fatalf("declined: %q", out)
	}
	// The person who ran it is told why the tool got no answer, and how to give one.
	if out, errs := call("", "greet"); !strings.Contains(out, "cannot answer elicitation/create requests") || !strings.Contains(errs, "--answer") {
		t.Fatalf("without --answer: %q\nstderr:\n%s", out, errs)
	}
	// With the input read from stdin, --answer has nothing left to read
	// answers from: the hint says to give the input another way too.
	if out, errs := call("{}", "greet", "-"); !strings.Contains(out, "cannot answer elicitation/create requests") || !strings.Contains(errs, "@file") {
		t.Fatalf("input from stdin, without --answer: %q\nstderr:\n%s", out, errs)
	}
}

// A device that is not a terminal (/dev/null, as cron and CI give) is no
// person to ask; and an answer read from stdin is bounded: a stream
// without newlines (/dev/zero) must not fill toolctl's memory.
func TestCallAnswersNotFromDevices(t *testing.T) {
	srv := natstest.Embedded(t, true)
	w, err := bus.Serve(natstest.Connect(t, srv), greeter(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if out, prompts := callWith(t, srv.ClientURL(), null, "greet"); !strings.Contains(out, "cannot answer elicitation/create requests") || strings.Contains(prompts, "the tool asks") {
		t.Errorf("stdin %s: %q, prompts %q", os.DevNull, out, prompts)
	}
	endless := io.LimitReader(strings.NewReader(strings.Repeat("a", 3<<20)), 3<<20) // no newline
	if out, _ := callWith(t, srv.ClientURL(), endless, "--answer", "greet"); !strings.Contains(out, "no answer: ") || !strings.Contains(out, "over") {
		t.Errorf("an answer without end: %.200q", out)
	}
}

// callWith runs toolctl call against url with stdin and returns its
// output and its standard error.
func callWith(t *testing.T, url string, stdin io.Reader, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"--nats", url, "call"}, args...), stdin, &out, &errb)
	if code != 0 {
		t.Fatalf("toolctl call %v: exit %d\n%s", args, code, &errb)
	}
	return out.String(), errb.String()
}

// greeter has the tool greet, which asks who the caller is and writes the
// answer: "accept NAME AGE", "decline ...", or "no answer: ERROR".
func greeter(t *testing.T) *toolkit.Toolkit {
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Stream("greet", "Asks who you are.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		res, err := toolkit.Ask(ctx, w, toolkit.MethodElicit, map[string]any{"message": "Who are you?",
			"requestedSchema": map[string]any{"type": "object", "required": []any{"name"},
				"properties": map[string]any{"name": map[string]any{"type": "string"}, "age": map[string]any{"type": "integer"}}}})
		if err != nil {
			return w.Write(toolkit.Text("no answer: " + err.Error()))
		}
		m := res.(map[string]any)
		content, _ := m["content"].(map[string]any)
		return w.Write(toolkit.Text(fmt.Sprintf("%v %v %v", m["action"], content["name"], content["age"])))
	})); err != nil {
		t.Fatal(err)
	}
	return tk
}
