package toolkit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// A middleware (or a Raw tool) that set or deleted keys of call.Input in
// place changed the map the caller passed to Call: in process, the caller
// saw its arguments changed after the call (a retry of them by the agent
// sent what the middleware made of them). The chain now gets a copy of
// the caller's map; the tool still sees what the middleware did.
func TestInputChangedInPlaceLeavesCallersMap(t *testing.T) {
	tk := newToolkit(t, nil)
	tk.Use(func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			call.Input["q"] = call.Input["q"].(string) + " (rewritten)"
			call.Input["added"] = true
			delete(call.Input, "drop")
			return next(ctx, call, w)
		}
	})
	mustAdd(t, tk, toolkit.Raw("search", "S.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		call.Input["tool"] = "was here"
		return w.Write(toolkit.Text(fmt.Sprint(call.Input["q"], " ", call.Input["added"], " ", call.Input["drop"])))
	}))
	for _, via := range []string{"Call", "Invoke"} {
		in := map[string]any{"q": "cats", "drop": 1}
		call := toolkit.ToolCall{ID: "1", Name: "search", Input: in}
		var text string
		if via == "Call" {
			text = collect(t, tk, context.Background(), call).final.Text()
		} else {
			text = tk.Invoke(context.Background(), call).Text()
		}
		if want := "cats (rewritten) true <nil>"; text != want {
			t.Errorf("%s: the tool saw %q, want %q", via, text, want)
		}
		if want := "map[drop:1 q:cats]"; fmt.Sprint(in) != want {
			t.Errorf("%s: the caller's input is %v after the call, want %s", via, in, want)
		}
	}
}
