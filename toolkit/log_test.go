package toolkit_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// TestToolLogsReachTheCaller: toolkit.Log passes a tool's log messages
// through the middleware to the caller (Call yields them as Event.Log,
// in order with the chunks); a level outside LogLevels is an error.
func TestToolLogsReachTheCaller(t *testing.T) {
	tk := toolkit.New(nil)
	tk.Use(middleware.Logging(nil))
	var badErr error
	if err := tk.Add(toolkit.Stream("chatty", "Logs while it works.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		if err := toolkit.Log(w, toolkit.LogMessage{Level: "info", Logger: "chatty", Data: "starting"}); err != nil {
			return err
		}
		if err := w.Write(toolkit.Text("done")); err != nil {
			return err
		}
		badErr = toolkit.Log(w, toolkit.LogMessage{Level: "loud", Data: "?"})
		return toolkit.Log(w, toolkit.LogMessage{Level: "warning", Data: map[string]any{"left": 0}})
	})); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var logs []toolkit.LogMessage
	for ev := range tk.Call(context.Background(), toolkit.ToolCall{ID: "c", Name: "chatty"}) {
		switch {
		case ev.Log != nil:
			kinds = append(kinds, "log")
			logs = append(logs, *ev.Log)
		case ev.Chunk != nil:
			kinds = append(kinds, "chunk")
		case ev.Final != nil:
			kinds = append(kinds, "final")
			if ev.Final.Text() != "done" {
				t.Errorf("final: %+v", ev.Final)
			}
		}
	}
	if got := len(kinds); got != 4 || kinds[0] != "log" || kinds[1] != "chunk" || kinds[2] != "log" || kinds[3] != "final" {
		t.Fatalf("events %v, want log chunk log final", kinds)
	}
	if logs[0].Level != "info" || logs[0].Logger != "chatty" || logs[0].Data != "starting" || logs[1].Level != "warning" {
		t.Errorf("logs: %+v", logs)
	}
	if badErr == nil {
		t.Error("a log level outside LogLevels was accepted")
	}
	// Invoke discards them; a Writer that cannot carry them drops them.
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "d", Name: "chatty"}); r.Text() != "done" {
		t.Errorf("invoke: %+v", r)
	}
}
