package main

import (
	"bytes"
	"context"
	"fmt"
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
// toolctl cannot answer.
func TestCallAnswersElicitation(t *testing.T) {
	srv := natstest.Embedded(t, true)
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
	w, err := bus.Serve(natstest.Connect(t, srv), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	call := func(stdin string, args ...string) (string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--nats", srv.ClientURL(), "call"}, args...), strings.NewReader(stdin), &out, &errb)
		if code != 0 {
			t.Fatalf("toolctl call %v: exit %d\n%s", args, code, &errb)
		}
		return out.String(), errb.String()
	}
	// age first (fields in name order), then a bad integer, then name.
	out, prompts := call("x\n7\nAda\n", "--answer", "greet")
	if strings.TrimSpace(out) != "accept Ada 7" || !strings.Contains(prompts, "the tool asks: Who are you?") || !strings.Contains(prompts, `"x" is not an integer`) {
		t.Fatalf("answered: %q\nprompts:\n%s", out, prompts)
	}
	if out, _ := call("\n\n", "--answer", "greet"); strings.TrimSpace(out) != "decline <nil> <nil>" {
		t.Fatalf("declined: %q", out)
	}
	if out, _ := call("", "greet"); !strings.Contains(out, "cannot answer elicitation/create requests") {
		t.Fatalf("without --answer: %q", out)
	}
	// /dev/null is a character device, not a terminal: nobody to ask (a
	// script run from cron or with </dev/null).
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	var out2, errb bytes.Buffer
	if code := run(context.Background(), []string{"--nats", srv.ClientURL(), "call", "greet"}, null, &out2, &errb); code != 0 {
		t.Fatalf("toolctl call greet </dev/null: exit %d\n%s", code, &errb)
	}
	if !strings.Contains(out2.String(), "cannot answer elicitation/create requests") || strings.Contains(errb.String(), "the tool asks") {
		t.Fatalf("with stdin /dev/null: %q, prompts %q; want the tool told toolctl cannot answer", &out2, &errb)
	}
}
