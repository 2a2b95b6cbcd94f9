package main_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// TestRefusedCallsLogged: every failed call has its line in the worker's
// log, also one answered without running its middleware: input that does
// not validate, a request that cannot be read. They had none (the logging
// middleware never saw them).
func TestRefusedCallsLogged(t *testing.T) {
	w := startWorker(t)
	if _, _, code := toolctl(t, w.url, "call", "--id", "badin", "echo", `{"text": 5}`); code == 0 {
		t.Fatal("echo with a number for its text succeeded")
	}
	nc, err := nats.Connect(w.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Request("tools.call.echo", []byte("not a call"), guard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct{ id, code string }{{"badin", "invalid_input"}, {"", "invalid_input"}} {
		if _, ok := w.stderr.wait(func(s string) bool {
			return strings.Contains(s, `"msg":"tool call"`) && strings.Contains(s, `"call":"`+want.id+`"`) &&
				strings.Contains(s, `"code":"`+want.code+`"`) && strings.Contains(s, `"level":"WARN"`)
		}); !ok {
			t.Errorf("no line for the %s call %q in the worker's log:\n%s", want.code, want.id, w.stderr)
		}
	}
}
